#!/usr/bin/env python3
"""The Markdown table of README.md from this folder's probe files (n128.json, n512.json,
n512_band.json written by run.sh): per model and layer, the range over its heads of the neighbour
share, the mean distance, rank90, entropy and (with a local band) the band's share of the
attention, and the most local head's numbers; the uniform weights' values in the header."""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def model_name(path, r):
    m = r["model"]
    kind = "full attention" if m["attention"] == "full" else f"Linformer k = {m['k_per_layer'][0]}"
    if r["layers"] and "band" in r["layers"][0]:
        kind += " + local band"
    return f"{os.path.basename(os.path.normpath(path))} ({kind}, n = {m['seq_len']})"


def span(values, digits):
    lo, hi = min(values), max(values)
    return f"{lo:.{digits}f}" if f"{lo:.{digits}f}" == f"{hi:.{digits}f}" else f"{lo:.{digits}f}–{hi:.{digits}f}"


def rows(report):
    out = []
    for path, r in report.items():
        u = r["uniform"]
        out.append(f"| **{model_name(path, r)}** | uniform: {u['neighbours']:.3f} | {u['distance']:.1f} | "
                   f"{u['rank90']} | | | |")
        for i, layer in enumerate(r["layers"]):
            if "neighbours" not in layer:
                continue
            best = max(range(len(layer["neighbours"])), key=lambda h: layer["neighbours"][h])
            out.append(f"| layer {i} | {span(layer['neighbours'], 3)} | {span(layer['distance'], 1)} | "
                       f"{span(layer['rank90'], 0)} | {span(layer['entropy'], 2)} | "
                       f"{span(layer['band'], 3) if 'band' in layer else '–'} | head {best}: "
                       f"{layer['neighbours'][best]:.3f}, distance {layer['distance'][best]:.1f}, "
                       f"rank90 {layer['rank90'][best]} |")
    return out


def main():
    lines = ["| model, layer | neighbours (share of value weight 1-2 positions away), over heads | mean distance | "
             "rank90 | entropy (over ln keys) | band's share of the attention | most local head |",
             "|---|---|---|---|---|---|---|"]
    for name in ("n128.json", "n512.json", "n512_band.json"):
        path = os.path.join(HERE, name)
        if os.path.exists(path):
            with open(path) as f:
                lines += rows(json.load(f))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())

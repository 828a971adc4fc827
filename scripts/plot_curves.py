#!/usr/bin/env python3
"""Validation perplexity curves of one or more runs, like Figure 3 of the Linformer paper.

Reads RUN_DIR/metrics.jsonl (written by `linformer train`) and draws validation perplexity
against updates and against training tokens, side by side, to OUT.png and OUT.svg.

Usage: plot_curves.py RUN_DIR [RUN_DIR ...] [--out results/curves] [--title TEXT] [--train]
"""
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_rows(run_dir):
    path = os.path.join(run_dir, "metrics.jsonl")
    if not os.path.exists(path):
        sys.exit(f"plot_curves: {path} not found (is {run_dir} a run directory of linformer train?)")
    rows = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                sys.exit(f"plot_curves: {path}:{number}: not JSON: {e}")
    return rows


def label_of(run_dir):
    return os.path.basename(os.path.normpath(run_dir))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", help="run directories")
    parser.add_argument("--out", default="results/curves", help="output path without extension")
    parser.add_argument("--title", default="Validation perplexity")
    parser.add_argument("--train", action="store_true", help="also draw training perplexity (dashed)")
    args = parser.parse_args(argv)

    fig, (by_update, by_tokens) = plt.subplots(1, 2, figsize=(12, 4.5))
    drawn = 0
    for run in args.runs:
        rows = read_rows(run)
        label = label_of(run)
        for kind, style in (("valid", "-"), ("train", "--")):
            if kind == "train" and not args.train:
                continue
            points = [r for r in rows if r.get("kind") == kind]
            if not points:
                continue
            updates = [r["update"] for r in points]
            tokens = [r["tokens"] for r in points]
            ppl = [r["perplexity"] for r in points]
            name = label if kind == "valid" else f"{label} (train)"
            line, = by_update.plot(updates, ppl, style, marker="o" if kind == "valid" else None, markersize=3, label=name)
            by_tokens.plot(tokens, ppl, style, color=line.get_color(), marker="o" if kind == "valid" else None,
                           markersize=3, label=name)
            drawn += 1
    if drawn == 0:
        sys.exit("plot_curves: no validation rows in any run (has a validation happened yet?)")
    for axis, xlabel in ((by_update, "updates"), (by_tokens, "training tokens")):
        axis.set_xlabel(xlabel)
        axis.set_ylabel("perplexity")
        axis.set_yscale("log")
        axis.grid(True, which="both", alpha=0.3)
    by_update.legend(fontsize=8)
    fig.suptitle(args.title)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    for extension in ("png", "svg"):
        fig.savefig(f"{args.out}.{extension}", dpi=120)
    print(f"plot_curves: wrote {args.out}.png and {args.out}.svg")


if __name__ == "__main__":
    main()

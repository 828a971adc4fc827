#!/usr/bin/env python3
"""Validation perplexity against updates for models trained at several seeds: each model's
geometric mean over its seeds as a line, the band from its lowest to its highest seed shaded,
and a table of the final values.

  plot_seed_bands.py --model LABEL RUN [RUN ...] [--model ...] --out PATH [--title TEXT] [--goal X]

RUN is a run directory (or a results folder) with metrics.jsonl. A model's line has a point at
every validation update all its seeds logged; a model with one seed is a plain line. Writes
PATH.png, PATH.svg and PATH.md (per model: seeds, final mean ± sd, lowest and highest, the
geometric mean's ratio to the first model's). --goal X draws a dashed line at X times the first
model's final geometric mean (a target such as "within 1.25x of the Transformer").
"""

import argparse
import json
import math
import os
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
matplotlib.rcParams["svg.hashsalt"] = "linformer"  # the same files from the same metrics
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402


def validations(run):
    """{update: validation perplexity} of a run directory's metrics.jsonl."""
    path = os.path.join(run, "metrics.jsonl")
    if not os.path.exists(path):
        sys.exit(f"plot_seed_bands: {path} not found (is {run} a run directory of linformer train?)")
    out = {}
    with open(path) as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"plot_seed_bands: {path}:{number}: not JSON: {e}")
            if row.get("kind") == "valid":
                out[row["update"]] = row["perplexity"]
    if not out:
        sys.exit(f"plot_seed_bands: {path} has no validation rows")
    return out


def band(curves):
    """[(update, geometric mean, lowest, highest)] at the updates every curve has."""
    shared = sorted(set.intersection(*(set(c) for c in curves)))
    return [(u, math.exp(statistics.fmean(math.log(c[u]) for c in curves)), min(c[u] for c in curves),
             max(c[u] for c in curves)) for u in shared]


def table(models):
    """Markdown: each model's final validation over its seeds."""
    first = None
    rows = []
    for label, runs, curves in models:
        finals = [c[max(c)] for c in curves]
        geo = math.exp(statistics.fmean(math.log(v) for v in finals))
        first = first or geo
        sd = f" ± {statistics.stdev(finals):.1f}" if len(finals) > 1 else ""
        rows.append(f"| {label} | {len(finals)} | {max(max(c) for c in curves)} | {statistics.fmean(finals):.1f}{sd} | "
                    f"{min(finals):.1f} | {max(finals):.1f} | {geo / first:.2f} |")
    return ("| model | seeds | last update | final validation ppl, mean ± sd | lowest | highest | "
            "× the first model (geometric means) |\n|---|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", action="append", nargs="+", required=True, metavar="LABEL RUN",
                        help="a model's label and the run directories of its seeds")
    parser.add_argument("--out", required=True, help="output path without extension")
    parser.add_argument("--title", default="Validation perplexity (lines: geometric mean over seeds; bands: lowest to highest)")
    parser.add_argument("--goal", type=float, help="a dashed line at this multiple of the first model's final value")
    args = parser.parse_args(argv)
    models = []
    for label, *runs in args.model:
        if not runs:
            parser.error(f"--model {label!r}: name its run directories after the label")
        models.append((label, runs, [validations(r) for r in runs]))

    fig, axis = plt.subplots(figsize=(9, 5.5))
    colours = plt.get_cmap("tab10").colors
    for i, (label, runs, curves) in enumerate(models):
        points = band(curves)
        if not points:
            sys.exit(f"plot_seed_bands: {label}: its runs share no validation update")
        x = [p[0] for p in points]
        colour = colours[i % len(colours)]
        seeds = f" ({len(runs)} seeds)" if len(runs) > 1 else " (1 seed)"
        axis.plot(x, [p[1] for p in points], "-", marker="o", markersize=3, color=colour, label=label + seeds)
        if len(runs) > 1:
            axis.fill_between(x, [p[2] for p in points], [p[3] for p in points], color=colour, alpha=0.2, linewidth=0)
    if args.goal:
        finals = [c[max(c)] for c in models[0][2]]
        goal = args.goal * math.exp(statistics.fmean(math.log(v) for v in finals))
        axis.axhline(goal, linestyle="--", linewidth=1, color="black",
                     label=f"{args.goal:g} × {models[0][0]}'s final ({goal:.1f})")
    axis.set_xlabel("updates")
    axis.set_ylabel("validation perplexity")
    axis.set_yscale("log")
    axis.yaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
    axis.yaxis.set_minor_formatter(matplotlib.ticker.ScalarFormatter())
    axis.grid(True, which="both", alpha=0.3)
    axis.legend(fontsize=8)
    axis.set_title(args.title, fontsize=10)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    for extension in ("png", "svg"):
        fig.savefig(f"{args.out}.{extension}", dpi=120, metadata={"Date": None} if extension == "svg" else {"Software": None})
    with open(f"{args.out}.md", "w") as f:
        f.write(table(models))
    print(f"plot_seed_bands: wrote {args.out}.png, .svg and .md")
    return 0


if __name__ == "__main__":
    sys.exit(main())

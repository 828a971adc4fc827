#!/usr/bin/env python3
"""Validation perplexity curves of one or more runs, like Figure 3 of the Linformer paper.

Reads RUN_DIR/metrics.jsonl (written by `linformer train`) and draws validation perplexity
against updates, against training tokens and against wall-clock time, side by side, to
OUT.png and OUT.svg. The unigram baseline (a model that knows token frequencies only,
logged beside each validation as unigram_perplexity) is drawn as a dotted reference line:
one black line when every run has the same baseline, else one per run in its colour. Runs
trained with validation.shuffle_words also get their validation on shuffled words, dash-dotted.
Runs with a sequence-length warm-up (train.short_seq_len in RUN_DIR/recipe.toml) get a thin
vertical line in their colour where their blocks grow to data.seq_len.

Usage: plot_curves.py RUN_DIR [RUN_DIR ...] [--out results/curves] [--title TEXT] [--train]
                      [--labels A,B,...] [--unigram PPL]
"""
import argparse
import json
import os
import sys
import tomllib

import matplotlib

matplotlib.use("Agg")
# The same figure from the same metrics gives the same files (no dates, no random SVG ids), so
# regenerating the reports leaves unchanged experiments unchanged in git.
matplotlib.rcParams["svg.hashsalt"] = "linformer"
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402


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


def unigram_of(rows):
    """The run's unigram baseline: the value of its validation rows (fixed masks: one value)."""
    values = [r["unigram_perplexity"] for r in rows if r.get("kind") == "valid" and r.get("unigram_perplexity")]
    return values[-1] if values else None


def warm_up_end(run_dir):
    """The last update of the run's sequence-length warm-up (recipe.toml's train.short_seq_updates), or None."""
    path = os.path.join(run_dir, "recipe.toml")
    if not os.path.exists(path):
        return None
    with open(path, "rb") as f:
        try:
            train = tomllib.load(f).get("train", {})
        except tomllib.TOMLDecodeError as e:
            sys.exit(f"plot_curves: {path}: not TOML: {e}")
    return train.get("short_seq_updates") if train.get("short_seq_len") else None


def run_styles(count):
    """(colour, validation marker) per run, no two alike: matplotlib's ten colours, or twenty (pairs of a
    dark and a light shade) for more runs; past twenty the colours repeat with another marker."""
    colours = plt.get_cmap("tab10" if count <= 10 else "tab20").colors
    markers = "osD^v"
    return [(colours[i % len(colours)], markers[(i // len(colours)) % len(markers)]) for i in range(count)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", help="run directories")
    parser.add_argument("--out", default="results/curves", help="output path without extension")
    parser.add_argument("--title", default="Validation perplexity")
    parser.add_argument("--train", action="store_true", help="also draw training perplexity (dashed)")
    parser.add_argument("--labels", help="comma-separated legend labels, one per run (default: directory names)")
    parser.add_argument("--unigram", type=float, help="unigram baseline perplexity for runs that did not log one")
    args = parser.parse_args(argv)
    labels = args.labels.split(",") if args.labels else [os.path.basename(os.path.normpath(r)) for r in args.runs]
    if len(labels) != len(args.runs):
        sys.exit(f"plot_curves: {len(labels)} labels for {len(args.runs)} runs")

    fig, axes = plt.subplots(1, 3, figsize=(16, 4.8))
    by_update, by_tokens, by_time = axes
    drawn = 0
    baselines = []  # (perplexity, colour)
    for run, label, (colour, valid_marker) in zip(args.runs, labels, run_styles(len(args.runs))):
        rows = read_rows(run)
        for kind, style in (("valid", "-"), ("train", "--")):
            if kind == "train" and not args.train:
                continue
            points = [r for r in rows if r.get("kind") == kind]
            if not points:
                continue
            ppl = [r["perplexity"] for r in points]
            name = label if kind == "valid" else f"{label} (train)"
            marker = valid_marker if kind == "valid" else None
            for axis, x in ((by_update, [r["update"] for r in points]),
                            (by_tokens, [r["tokens"] / 1e6 for r in points]),
                            (by_time, [r.get("elapsed_seconds", 0) / 60 for r in points])):
                axis.plot(x, ppl, style, color=colour, marker=marker, markersize=3, label=name)
            drawn += 1
        # validation.shuffle_words: the same validation with each sentence's words shuffled, thin and
        # dash-dotted in the run's colour; where it parts from the solid line the model uses word order.
        shuffled = [r for r in rows if r.get("kind") == "valid" and r.get("shuffled_perplexity")]
        if shuffled:
            for axis, x in ((by_update, [r["update"] for r in shuffled]),
                            (by_tokens, [r["tokens"] / 1e6 for r in shuffled]),
                            (by_time, [r.get("elapsed_seconds", 0) / 60 for r in shuffled])):
                axis.plot(x, [r["shuffled_perplexity"] for r in shuffled], "-.", color=colour, linewidth=1,
                          label=f"{label} (words shuffled)")
        # The warm-up's end: at its update, and at the tokens and time of the first row logged there or after.
        end = warm_up_end(run)
        after = [r for r in rows if r.get("update", 0) >= end] if end else []
        if after:
            first = min(after, key=lambda r: r["update"])
            for axis, x in ((by_update, end), (by_tokens, first["tokens"] / 1e6),
                            (by_time, first.get("elapsed_seconds", 0) / 60)):
                axis.axvline(x, linestyle=(0, (1, 3)), linewidth=1, color=colour,
                             label=f"{label}: blocks of full length from update {end}" if axis is by_update else None)
        unigram = unigram_of(rows) or args.unigram
        if unigram:
            baselines.append((unigram, colour))
    if drawn == 0:
        sys.exit("plot_curves: no validation rows in any run (has a validation happened yet?)")
    if baselines:
        # One dotted line per distinct baseline (runs with the same validation tokens share one),
        # black when all share it, else in the colour of the first run that has it.
        distinct = []
        for value, colour in baselines:
            if not any(abs(value / v - 1) < 0.005 for v, _ in distinct):
                distinct.append((value, colour))
        for value, colour in distinct:
            for axis in axes:
                axis.axhline(value, linestyle=":", linewidth=1.2, color="black" if len(distinct) == 1 else colour,
                             label=f"unigram baseline ({value:.0f})" if axis is by_update else None)
    for axis, xlabel in ((by_update, "updates"), (by_tokens, "training tokens (millions)"),
                         (by_time, "wall-clock minutes")):
        axis.set_xlabel(xlabel)
        axis.set_ylabel("validation perplexity")
        axis.set_yscale("log")
        axis.yaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
        axis.yaxis.set_minor_formatter(matplotlib.ticker.ScalarFormatter())
        axis.grid(True, which="both", alpha=0.3)
    # The legend below the three panels, where it hides no curve; the figure grows to hold it.
    handles, names = by_update.get_legend_handles_labels()
    columns = min(3, len(names))
    legend_rows = -(-len(names) // columns)
    legend_inches = 0.25 + 0.2 * legend_rows
    fig.set_size_inches(16, 4.8 + legend_inches)
    fig.legend(handles, names, loc="lower center", ncol=columns, fontsize=8, frameon=False)
    fig.suptitle(args.title)
    fig.tight_layout(rect=(0, legend_inches / (4.8 + legend_inches), 1, 1))
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    for extension in ("png", "svg"):
        metadata = {"Date": None} if extension == "svg" else {"Software": None}
        fig.savefig(f"{args.out}.{extension}", dpi=120, metadata=metadata)
    print(f"plot_curves: wrote {args.out}.png and {args.out}.svg")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Puts two `linformer bench attention --csv` grids, fp32 and bf16, side by side (Markdown on stdout).

Usage: table3_precisions.py FP32_CSV BF16_CSV

Three tables: bf16's speed-up over fp32 per cell (time per sequence, full attention and each k);
Linformer's speed-up over full attention within each precision (the paper's Table 3 quantity);
and every cell's numbers (ms per sequence, GFLOP/s, activation MiB per sequence). A cell that
was not measured in a precision (over the memory budget, over the time limit) shows its status.
Exits 2 with a message naming the file when a CSV is missing, lacks a column, or the two grids
hold different cells.
"""
import argparse
import csv
import sys

COLUMNS = ("n", "k", "attention", "status", "bytes_per_sequence", "seconds_per_sequence", "gflops_per_s")


def fail(message):
    print(f"table3_precisions: {message}", file=sys.stderr)
    sys.exit(2)


def read_grid(path):
    """{(n, k): row} where k = 0 is full attention."""
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
            if missing:
                fail(f"{path}: no column {', '.join(missing)} (is it a `bench attention --csv` file?)")
            grid = {}
            for line, row in enumerate(reader, start=2):
                try:
                    cell = (int(row["n"]), int(row["k"]))
                except ValueError:
                    fail(f"{path}:{line}: n and k must be integers, got {row['n']!r}, {row['k']!r}")
                grid[cell] = row
    except OSError as e:
        fail(f"cannot read {path}: {e.strerror}")
    if not grid:
        fail(f"{path}: no cells")
    return grid


def seconds(row):
    return float(row["seconds_per_sequence"]) if row["status"] == "measured" else None


def ratio(numerator, denominator):
    return f"{numerator / denominator:.2f}x" if numerator and denominator else "–"


def cell_label(k):
    return "full" if k == 0 else f"k = {k}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fp32_csv")
    parser.add_argument("bf16_csv")
    args = parser.parse_args()
    fp32, bf16 = read_grid(args.fp32_csv), read_grid(args.bf16_csv)
    if fp32.keys() != bf16.keys():
        only = sorted(fp32.keys() ^ bf16.keys())
        fail(f"{args.fp32_csv} and {args.bf16_csv} hold different cells (n, k), e.g. {only[:3]}: "
             "run both with the same --lengths and --ks")
    lengths = sorted({n for n, _ in fp32})
    ks = sorted({k for _, k in fp32 if k})

    def grid_table(title, value):
        print(f"### {title}\n")
        print("| n | full | " + " | ".join(f"k = {k}" for k in ks) + " |")
        print("|---|---|" + "---|" * len(ks))
        for n in lengths:
            cells = [value(n, k) if (n, k) in fp32 else "" for k in [0] + ks]
            print(f"| {n} | " + " | ".join(cells) + " |")
        print()

    def status(n, k):
        return next(g[(n, k)]["status"] for g in (fp32, bf16) if g[(n, k)]["status"] != "measured")

    def bf16_speedup(n, k):
        a, b = seconds(fp32[(n, k)]), seconds(bf16[(n, k)])
        return ratio(a, b) if a and b else status(n, k)

    def linformer_speedup(n, k):
        if k == 0:
            return ""
        return " / ".join(ratio(seconds(g[(n, 0)]), seconds(g[(n, k)])) for g in (fp32, bf16))

    grid_table("bf16 over fp32: time per sequence (fp32 ÷ bf16)", bf16_speedup)
    grid_table("Linformer over full attention: time per sequence, fp32 / bf16", linformer_speedup)

    print("### Every cell\n")
    print("| n | attention | ms / sequence fp32 | bf16 | GFLOP/s fp32 | bf16 | MiB / sequence fp32 | bf16 |")
    print("|---|---|---|---|---|---|---|---|")
    for (n, k) in sorted(fp32):
        a, b = fp32[(n, k)], bf16[(n, k)]
        ms = [f"{1000 * seconds(r):.1f}" if seconds(r) else r["status"] for r in (a, b)]
        gflops = [r["gflops_per_s"] or "–" for r in (a, b)]
        mib = [f"{float(r['bytes_per_sequence']) / 2**20:.1f}" if r["bytes_per_sequence"] else "–" for r in (a, b)]
        print(f"| {n} | {cell_label(k)} | " + " | ".join(ms + gflops + mib) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Compares the final validation perplexity of two runs (their metrics.jsonl), or of pairs of runs.

Usage: compare_valid_ppl.py RUN_A RUN_B [RUN_A2 RUN_B2 ...] [--max-relative 0.01] [--last N]
Prints both perplexities and how far apart they are (relative to RUN_A's); exits 0 when
|B - A| / A <= the limit and both were validated after the same updates, 1 otherwise, and 2
with a message naming the file when a run has fewer validation records than compared.
With --last N, A and B are each the mean perplexity of the run's last N validations (the final
one is printed too): two runs whose arithmetic differs by rounding follow trajectories that drift
apart and back (in a 2,800-update run, their training losses by up to 1% for hundreds of updates),
so one validation compares where each happened to be, and a mean over the run's last stretch
compares the runs.
With several pairs (e.g. fp32 and bf16 at seeds 1, 2, 3), each pair is printed as above and the
limit applies to the mean over the pairs of A's and of B's values: where a pair of runs lands
varies with the trajectory (by about 1.5% for the default recipe in fp32 against bf16), and the
mean over seeds averages that out.
"""
import argparse
import json
import os
import sys


def fail(message):
    print(f"compare_valid_ppl: {message}", file=sys.stderr)
    sys.exit(2)


def validations(run, count):
    """The run's last `count` validation records, oldest first."""
    path = os.path.join(run, "metrics.jsonl")
    try:
        with open(path) as f:
            rows = [json.loads(line) for line in f if line.strip()]
    except OSError as e:
        fail(f"cannot read {path}: {e.strerror}")
    except json.JSONDecodeError as e:
        fail(f"{path} is not JSON lines: {e}")
    valid = [r for r in rows if r.get("kind") == "valid"]
    if not valid:
        fail(f"{path} has no validation record")
    if len(valid) < count:
        fail(f"{path} has {len(valid)} validation records, fewer than the {count} to compare")
    return valid[-count:]


def compare_pair(runs, last, max_relative, label):
    """Prints one pair's comparison; returns (A's value, B's value, same updates)."""
    records = [validations(run, last) for run in runs]
    updates = [[r["update"] for r in rs] for rs in records]
    finals = [rs[-1]["perplexity"] for rs in records]
    final_apart = abs(finals[1] - finals[0]) / finals[0]
    print(f"{label}final validation perplexity: {runs[0]} {finals[0]:.3f} (update {updates[0][-1]}), {runs[1]} "
          f"{finals[1]:.3f} (update {updates[1][-1]}): {100 * final_apart:.2f}% apart"
          + (f", limit {100 * max_relative:g}%" if last == 1 and label == "" else ""))
    values = finals
    if last > 1:
        values = [sum(r["perplexity"] for r in rs) / last for rs in records]
        apart = abs(values[1] - values[0]) / values[0]
        print(f"{label}mean of the last {last} validations (updates {updates[0][0]}-{updates[0][-1]}): {runs[0]} "
              f"{values[0]:.3f}, {runs[1]} {values[1]:.3f}: {100 * apart:.2f}% apart"
              + (f", limit {100 * max_relative:g}%" if label == "" else ""))
    same = updates[0] == updates[1]
    if not same:
        print(f"{label}the runs were validated after different updates")
    return values[0], values[1], same


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", metavar="RUN", help="RUN_A RUN_B, or several such pairs")
    parser.add_argument("--max-relative", type=float, default=0.01)
    parser.add_argument("--last", type=int, default=1, help="compare the mean of the last N validations")
    args = parser.parse_args()
    if args.last < 1:
        fail(f"--last must be at least 1, not {args.last}")
    if len(args.runs) < 2 or len(args.runs) % 2:
        fail(f"give runs in pairs (RUN_A RUN_B ...), not {len(args.runs)} run(s)")
    pairs = [args.runs[i:i + 2] for i in range(0, len(args.runs), 2)]
    several = len(pairs) > 1
    results = [compare_pair(pair, args.last, args.max_relative, f"pair {i + 1}: " if several else "")
               for i, pair in enumerate(pairs)]
    a = sum(r[0] for r in results) / len(results)
    b = sum(r[1] for r in results) / len(results)
    apart = abs(b - a) / a
    if several:
        what = "final validations" if args.last == 1 else f"means of the last {args.last} validations"
        print(f"mean over the {len(pairs)} pairs of the {what}: A {a:.3f}, B {b:.3f}: {100 * apart:.2f}% apart, "
              f"limit {100 * args.max_relative:g}%")
    if not all(r[2] for r in results):
        return 1
    return 0 if apart <= args.max_relative else 1


if __name__ == "__main__":
    sys.exit(main())

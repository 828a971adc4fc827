#!/usr/bin/env python3
"""Compares the final validation perplexity of two runs (their metrics.jsonl).

Usage: compare_valid_ppl.py RUN_A RUN_B [--max-relative 0.01] [--last N]
Prints both perplexities and how far apart they are (relative to RUN_A's); exits 0 when
|B - A| / A <= the limit and both were validated after the same updates, 1 otherwise, and 2
with a message naming the file when a run has fewer validation records than compared.
With --last N, A and B are each the mean perplexity of the run's last N validations (the final
one is printed too): two runs whose arithmetic differs by rounding follow trajectories that drift
apart and back (in a 2,800-update run, their training losses by up to 1% for hundreds of updates),
so one validation compares where each happened to be, and a mean over the run's last stretch
compares the runs.
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_a")
    parser.add_argument("run_b")
    parser.add_argument("--max-relative", type=float, default=0.01)
    parser.add_argument("--last", type=int, default=1, help="compare the mean of the last N validations")
    args = parser.parse_args()
    if args.last < 1:
        fail(f"--last must be at least 1, not {args.last}")
    runs = (args.run_a, args.run_b)
    records = [validations(run, args.last) for run in runs]
    updates = [[r["update"] for r in rs] for rs in records]
    finals = [rs[-1]["perplexity"] for rs in records]
    final_apart = abs(finals[1] - finals[0]) / finals[0]
    print(f"final validation perplexity: {runs[0]} {finals[0]:.3f} (update {updates[0][-1]}), {runs[1]} {finals[1]:.3f} "
          f"(update {updates[1][-1]}): {100 * final_apart:.2f}% apart"
          + (f", limit {100 * args.max_relative:g}%" if args.last == 1 else ""))
    apart = final_apart
    if args.last > 1:
        means = [sum(r["perplexity"] for r in rs) / args.last for rs in records]
        apart = abs(means[1] - means[0]) / means[0]
        print(f"mean of the last {args.last} validations (updates {updates[0][0]}-{updates[0][-1]}): {runs[0]} "
              f"{means[0]:.3f}, {runs[1]} {means[1]:.3f}: {100 * apart:.2f}% apart, limit {100 * args.max_relative:g}%")
    if updates[0] != updates[1]:
        print("the runs were validated after different updates")
        return 1
    return 0 if apart <= args.max_relative else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Compares the final validation perplexity of two runs (their metrics.jsonl).

Usage: compare_valid_ppl.py RUN_A RUN_B [--max-relative 0.01]
Prints both perplexities and how far apart they are (relative to RUN_A's); exits 0 when
|B - A| / A <= the limit and both were validated after the same update, 1 otherwise, and 2
with a message naming the file when a run has no metrics or no validation record.
"""
import argparse
import json
import os
import sys


def fail(message):
    print(f"compare_valid_ppl: {message}", file=sys.stderr)
    sys.exit(2)


def final_validation(run):
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
    return valid[-1]["perplexity"], valid[-1]["update"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_a")
    parser.add_argument("run_b")
    parser.add_argument("--max-relative", type=float, default=0.01)
    args = parser.parse_args()
    (a, update_a), (b, update_b) = final_validation(args.run_a), final_validation(args.run_b)
    apart = abs(b - a) / a
    print(f"final validation perplexity: {args.run_a} {a:.3f} (update {update_a}), {args.run_b} {b:.3f} "
          f"(update {update_b}): {100 * apart:.2f}% apart, limit {100 * args.max_relative:g}%")
    if update_a != update_b:
        print("the runs were last validated after different updates")
        return 1
    return 0 if apart <= args.max_relative else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env bash
# Pinned (this change) against unpinned (main) OpenMP threads, alternating, 3 rounds: bench train
# idle and beside a CPU-bound process started after the idle steps (spin count 5,000 both).
cd /work/main
for round in 1 2 3; do
  for recipe in default base tiny; do
    case $recipe in
      default) r=recipes/brown/default.toml; s=20;;
      base) r=recipes/brown/base.toml; s=8;;
      tiny) r=recipes/ci/tiny.toml; s=40;;
    esac
    for b in unpinned pinned; do
      out=$(/tmp/runbin/$b bench train --recipe $r --steps $s --beside-busy-process 2>&1)
      echo "round $round $recipe $b: $(echo "$out" | grep -o 'throughput: [0-9]* tokens/s') | $(echo "$out" | grep -o 'shared CPU: .*of the idle median')"
    done
  done
done

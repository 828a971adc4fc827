#!/usr/bin/env bash
# Two OpenMP programs on the same 2 cores: two `bench train` of the same recipe at once, unpinned
# (main) then pinned (this change), twice; each line: the two programs' throughputs.
cd /work/main
for r in tiny default base; do
  case $r in tiny) recipe=recipes/ci/tiny.toml; steps=300;; *) recipe=recipes/brown/$r.toml; steps=10;; esac
  for b in unpinned pinned unpinned pinned; do
    for i in 1 2; do /tmp/runbin/$b bench train --recipe $recipe --steps $steps > /tmp/q/pin/two_${r}_${b}_$i.txt 2>&1 & done
    wait
    echo "$r $b: $(grep -ho 'throughput: [0-9]* tokens/s' /tmp/q/pin/two_${r}_${b}_*.txt | tr '\n' ' ')"
  done
done

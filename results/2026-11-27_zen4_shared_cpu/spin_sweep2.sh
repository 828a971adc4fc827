#!/usr/bin/env bash
# S/M as recipes/bench/*.toml since 2026-11-28 (the same resolved recipe as the --set chain this was measured with)
# Idle speed by spin count: the CI's tiny model (bench train --steps 50, with --beside-busy-process
# for the shared share too) and config S in bf16 (Linformer); 3 rounds, alternating.
cd /work/main
B=${LINFORMER:-build/linformer}
for round in 1 2 3; do
  for spin in 10000 1000 300; do
    echo "round $round spin $spin tiny: $(GOMP_SPINCOUNT=$spin $B bench train --recipe recipes/ci/tiny.toml --steps 50 --beside-busy-process 2>&1 | grep -E '^shared CPU|^throughput' | sed 's/ (a fair share.*//; s/GFLOP.*//' | tr '\n' ' ')"
    echo "round $round spin $spin S bf16: $(GOMP_SPINCOUNT=$spin $B bench train --recipe recipes/bench/S.toml --set train.precision=bf16 --steps 8 2>&1 | grep -E '^throughput' | sed 's/GFLOP.*//')"
  done
done

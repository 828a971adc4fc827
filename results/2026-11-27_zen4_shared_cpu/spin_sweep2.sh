#!/usr/bin/env bash
# Idle speed by spin count: the CI's tiny model (bench train --steps 50, with --beside-busy-process
# for the shared share too) and config S in bf16 (Linformer); 3 rounds, alternating.
cd /work/main
B=${LINFORMER:-build/linformer}
S="--set model.d_model=256 --set model.heads=4 --set model.ffn_dim=1024 --set model.layers=4 --set masking.probability=0.15 --set model.k=128 --set model.dropout=0 --set model.attention_dropout=0 --set train.precision=bf16"
for round in 1 2 3; do
  for spin in 10000 1000 300; do
    echo "round $round spin $spin tiny: $(GOMP_SPINCOUNT=$spin $B bench train --recipe recipes/ci/tiny.toml --steps 50 --beside-busy-process 2>&1 | grep -E '^shared CPU|^throughput' | sed 's/ (a fair share.*//; s/GFLOP.*//' | tr '\n' ' ')"
    echo "round $round spin $spin S bf16: $(GOMP_SPINCOUNT=$spin $B bench train --recipe recipes/brown/base.toml $S --steps 8 2>&1 | grep -E '^throughput' | sed 's/GFLOP.*//')"
  done
done

#!/usr/bin/env bash
# S/M as recipes/bench/*.toml since 2026-11-28 (the same resolved recipe as the --set chain this was measured with)
# The training step in fp32 and bf16 against PyTorch (fp32, bf16 autocast), side by side:
# scripts/bench_compare.sh for configs S (Linformer k = 128 headwise, and full attention) and M,
# each precision alternating the two programs over 3 rounds; then the bf16 check. Run it on an
# idle machine (nothing else running); the outputs go next to this script.
# S = {vocab 8000, n 512, d 256, 4 heads, FFN 1024, 4 layers, batch 8, 15% masked, dropout 0};
# M = S with d 512, 8 heads, FFN 2048, 6 layers.
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=results/archive/2026-11-25_bf16
scripts/machine_info.sh > "$out/machine.txt"
for precision in fp32 bf16; do
  PRECISION=$precision ROUNDS=3 STEPS=8 scripts/bench_compare.sh recipes/bench/S.toml \
    > "$out/S_linformer_$precision.txt" 2>&1
  PRECISION=$precision ROUNDS=3 STEPS=8 scripts/bench_compare.sh recipes/bench/S_full.toml \
    > "$out/S_full_$precision.txt" 2>&1
  PRECISION=$precision ROUNDS=3 STEPS=4 scripts/bench_compare.sh recipes/bench/M.toml \
    > "$out/M_linformer_$precision.txt" 2>&1
done
# One bench train output per precision for config S, with the split by stage and kernel family.
for precision in fp32 bf16; do
  build/linformer bench train --recipe recipes/bench/S.toml --set train.precision=$precision --steps 8 > "$out/S_bench_train_$precision.txt"
done

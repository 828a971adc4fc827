#!/usr/bin/env bash
# The training step in fp32 and bf16 against PyTorch (fp32, bf16 autocast), side by side:
# scripts/bench_compare.sh for configs S (Linformer k = 128 headwise, and full attention) and M,
# each precision alternating the two programs over 3 rounds; then the bf16 check. Run it on an
# idle machine (nothing else running); the outputs go next to this script.
# S = {vocab 8000, n 512, d 256, 4 heads, FFN 1024, 4 layers, batch 8, 15% masked, dropout 0};
# M = S with d 512, 8 heads, FFN 2048, 6 layers.
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=results/archive/2026-11-25_bf16
S=(--set model.d_model=256 --set model.heads=4 --set model.ffn_dim=1024 --set model.layers=4
   --set masking.probability=0.15 --set model.k=128)
M=(--set model.d_model=512 --set model.heads=8 --set model.ffn_dim=2048 --set model.layers=6
   --set masking.probability=0.15 --set model.k=128)
scripts/machine_info.sh > "$out/machine.txt"
for precision in fp32 bf16; do
  PRECISION=$precision ROUNDS=3 STEPS=8 scripts/bench_compare.sh recipes/brown/base.toml "${S[@]}" \
    > "$out/S_linformer_$precision.txt" 2>&1
  PRECISION=$precision ROUNDS=3 STEPS=8 scripts/bench_compare.sh recipes/brown/base.toml "${S[@]}" \
    --set model.attention=full > "$out/S_full_$precision.txt" 2>&1
  PRECISION=$precision ROUNDS=3 STEPS=4 scripts/bench_compare.sh recipes/brown/base.toml "${M[@]}" \
    > "$out/M_linformer_$precision.txt" 2>&1
done
# One bench train output per precision for config S, with the split by stage and kernel family.
for precision in fp32 bf16; do
  build/linformer bench train --recipe recipes/brown/base.toml "${S[@]}" --set model.dropout=0 \
    --set model.attention_dropout=0 --set train.precision=$precision --steps 8 > "$out/S_bench_train_$precision.txt"
done

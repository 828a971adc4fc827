#!/usr/bin/env bash
# scripts/bench_compare.sh (this program against PyTorch on the same training step, alternating)
# for the performance issue's three configurations: S Linformer (n 512, d 256, 4 heads, FFN 1024,
# 4 layers, batch 8, k 128 headwise), S with full attention, and M (d 512, 8 heads, FFN 2048,
# 6 layers); 3 rounds each (S 8 steps, M 4). Writes OUT/{S_linformer,S_full,M_linformer}_PRECISION.txt.
# Run it on an idle machine.
# Usage: PRECISION=fp32|bf16 scripts/bench_compare_configs.sh OUT_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: PRECISION=fp32|bf16 scripts/bench_compare_configs.sh OUT_DIR}
precision=${PRECISION:-fp32}
mkdir -p "$out"
S=(--set model.d_model=256 --set model.heads=4 --set model.ffn_dim=1024 --set model.layers=4
   --set masking.probability=0.15 --set model.k=128)
M=(--set model.d_model=512 --set model.heads=8 --set model.ffn_dim=2048 --set model.layers=6
   --set masking.probability=0.15 --set model.k=128)
export PRECISION=$precision ROUNDS=3
STEPS=8 scripts/bench_compare.sh recipes/brown/base.toml "${S[@]}" > "$out/S_linformer_$precision.txt" 2>&1
STEPS=8 scripts/bench_compare.sh recipes/brown/base.toml "${S[@]}" --set model.attention=full \
  > "$out/S_full_$precision.txt" 2>&1
STEPS=4 scripts/bench_compare.sh recipes/brown/base.toml "${M[@]}" > "$out/M_linformer_$precision.txt" 2>&1

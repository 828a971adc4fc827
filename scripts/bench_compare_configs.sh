#!/usr/bin/env bash
# scripts/bench_compare.sh (this program against PyTorch on the same training step, alternating)
# for the performance issue's three configurations, recipes/bench/S.toml (Linformer: n 512, d 256,
# 4 heads, FFN 1024, 4 layers, batch 8, k 128 headwise), S_full.toml (S with full attention) and
# M.toml (d 512, 8 heads, FFN 2048, 6 layers); 3 rounds each (S 8 steps, M 4).
# Writes OUT/{S_linformer,S_full,M_linformer}_PRECISION.txt.
# Run it on an idle machine.
# Usage: PRECISION=fp32|bf16 scripts/bench_compare_configs.sh OUT_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: PRECISION=fp32|bf16 scripts/bench_compare_configs.sh OUT_DIR}
precision=${PRECISION:-fp32}
mkdir -p "$out"
export PRECISION=$precision ROUNDS=3
STEPS=8 scripts/bench_compare.sh recipes/bench/S.toml > "$out/S_linformer_$precision.txt" 2>&1
STEPS=8 scripts/bench_compare.sh recipes/bench/S_full.toml > "$out/S_full_$precision.txt" 2>&1
STEPS=4 scripts/bench_compare.sh recipes/bench/M.toml > "$out/M_linformer_$precision.txt" 2>&1

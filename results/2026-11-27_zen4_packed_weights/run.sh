#!/usr/bin/env bash
# S/M as recipes/bench/*.toml since 2026-11-28 (the same resolved recipe as the --set chain this was measured with)
# Weights packed into the kernel's blocked layout before tall products (src/kernels/matmul.cpp,
# packs_weights), measured on an AMD EPYC with avx512_bf16 (the performance issue's kind of
# machine), idle, in one run:
#   1. pack_probe: each of config S's and M's products alone, plain against reorder + packed
#      product (timed together), bf16 and f32, and whether the two give the same bits;
#   2. the training step, main before the change (BEFORE) against this change (AFTER), alternating:
#      config S (Linformer k = 128 and full attention) in bf16 (5 rounds) and fp32 (3), M in bf16 (3);
#   3. this change against PyTorch (scripts/bench_compare.sh), bf16 autocast and fp32, S Linformer,
#      S full attention, M.
# Usage: results/2026-11-27_zen4_packed_weights/run.sh BEFORE_BINARY AFTER_BINARY
#   (AFTER must be the build/linformer that scripts/bench_compare.sh runs.)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=results/2026-11-27_zen4_packed_weights
before=${1:?usage: run.sh BEFORE AFTER}
after=${2:?usage: run.sh BEFORE AFTER}
scripts/machine_info.sh > "$out/machine.txt"
"$after" --version >> "$out/machine.txt"
g++ -O2 -std=c++17 "$out/pack_probe.cpp" -o /tmp/pack_probe -ldnnl
OMP_NUM_THREADS=2 /tmp/pack_probe > "$out/pack_probe.txt"
M=(--set model.d_model=512 --set model.heads=8 --set model.ffn_dim=2048 --set model.layers=6)
PRECISION=bf16 ROUNDS=5 scripts/bench_before_after.sh "$before" "$after" "$out/S_bf16"
PRECISION=fp32 ROUNDS=3 scripts/bench_before_after.sh "$before" "$after" "$out/S_fp32"
PRECISION=bf16 ROUNDS=3 scripts/bench_before_after.sh "$before" "$after" "$out/M_bf16" "${M[@]}"
for precision in bf16 fp32; do
  rounds=5; [ $precision = fp32 ] && rounds=3
  PRECISION=$precision ROUNDS=$rounds STEPS=8 scripts/bench_compare.sh recipes/bench/S.toml \
    > "$out/torch_S_linformer_$precision.txt" 2>&1
  PRECISION=$precision ROUNDS=$rounds STEPS=8 scripts/bench_compare.sh recipes/bench/S_full.toml \
    > "$out/torch_S_full_$precision.txt" 2>&1
  PRECISION=$precision ROUNDS=3 STEPS=4 scripts/bench_compare.sh recipes/bench/M.toml \
    > "$out/torch_M_$precision.txt" 2>&1
done

#!/usr/bin/env bash
# S/M as recipes/bench/*.toml since 2026-11-28 (the same resolved recipe as the --set chain this was measured with)
# Softmax row sums in f32 over 16 lanes (the exponentials' pass and the backward's dot products
# had vectorised 8 lanes wide on double sums), measured on an avx512_bf16 machine, idle: the step
# before and after in bf16 and fp32 (bench_before_after, alternating; each line has the softmax
# kernels' own time), full attention against PyTorch's bf16 autocast, and the bf16 check.
# Outputs go next to this script. BEFORE: a build of the commit before the change (646463c);
# AFTER: a build with the change (branch softmax-f32-sums, c7adc2a; or main with
# softmax_f32_sums.patch applied).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=$(dirname "$0")
before=${BEFORE:?set BEFORE to a linformer binary built from the commit before the change}
after=${AFTER:-build/linformer}
PRECISION=bf16 ROUNDS=5 scripts/bench_before_after.sh "$before" "$after" "$out/bf16"
PRECISION=fp32 ROUNDS=3 scripts/bench_before_after.sh "$before" "$after" "$out/fp32"
PRECISION=bf16 ROUNDS=5 STEPS=8 scripts/bench_compare.sh recipes/bench/S_full.toml > "$out/S_full_bf16.txt" 2>&1
BF16_CHECK_DIR=runs/bf16_check_softmax LINFORMER="$after" scripts/bf16_check.sh > "$out/bf16_check_seed1.txt" 2>&1 || true
SEEDS="2 3" BF16_CHECK_DIR=runs/bf16_check_softmax_seeds LINFORMER="$after" scripts/bf16_check.sh > "$out/bf16_check_seeds2_3.txt" 2>&1 || true
# bf16 against fp32 with both binaries at seeds 4 and 5: one fp32 run per seed (after: its fp32
# matches before's to 4 decimals of the loss), a bf16 run of each binary.
SEEDS="4 5" BF16_CHECK_DIR=runs/ab_new LINFORMER="$after" scripts/bf16_check.sh > "$out/ab_after_seeds4_5.txt" 2>&1 || true
for s in 4 5; do mkdir -p runs/ab_old/seed$s && rm -rf runs/ab_old/seed$s/fp32 && cp -r runs/ab_new/seed$s/fp32 runs/ab_old/seed$s/fp32; done
PRECISIONS=bf16 SEEDS="4 5" BF16_CHECK_DIR=runs/ab_old LINFORMER="$before" scripts/bf16_check.sh > "$out/ab_before_seeds4_5.txt" 2>&1 || true

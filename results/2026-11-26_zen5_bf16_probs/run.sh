#!/usr/bin/env bash
# S/M as recipes/bench/*.toml since 2026-11-28 (the same resolved recipe as the --set chain this was measured with)
# bf16 training keeps attention probabilities only in bf16 (8069b44: P's rounding is what the
# softmax backward reads; 646463c: no f32 P or dP kept without attention dropout), measured on the
# AMD EPYC Zen 5 VM: the step before and after (bench_before_after, alternating), full attention
# against PyTorch's bf16 autocast, the activation memory of config S in both precisions, and the
# bf16 check at seeds 1, 2, 3 (seed 1's fp32 run is the one of results/2026-11-26_zen5_bf16/; fp32
# is unchanged by these commits). Run it on an idle machine; outputs go next to this script.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=results/2026-11-26_zen5_bf16_probs
before=${BEFORE:-/tmp/runbin/linformer_c7e8e40}  # the binary before these commits
after=${AFTER:-build/linformer}
ROUNDS=5 scripts/bench_before_after.sh "$before" "$after" "$out"
for bin in "$before" "$after"; do
  for precision in fp32 bf16; do
    echo "$("$bin" --version | head -1), $precision: $("$bin" bench train --recipe recipes/bench/S_full.toml \
      --set train.precision=$precision --steps 2 | grep '^memory')"
  done
done > "$out/memory_full_attention.txt"
PRECISION=bf16 ROUNDS=5 STEPS=8 scripts/bench_compare.sh recipes/bench/S_full.toml > "$out/S_full_bf16.txt" 2>&1
# The bf16 check at three seeds (about 7 minutes a run here).
BF16_CHECK_DIR=runs/bf16_check_s1 PRECISIONS=bf16 LINFORMER="$after" scripts/bf16_check.sh > "$out/bf16_check_seed1.txt" 2>&1 || true
for seed in 2 3; do
  BF16_CHECK_DIR=runs/bf16_check_s$seed LINFORMER="$after" scripts/bf16_check.sh recipes/brown/default.toml "" \
    --set seed=$seed > "$out/bf16_check_seed$seed.txt" 2>&1 || true
done

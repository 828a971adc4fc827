#!/usr/bin/env bash
# S/M as recipes/bench/*.toml since 2026-11-28 (the same resolved recipe as the --set chain this was measured with)
# Attention scores a few sequences at a time: the score matmul and its softmax (in the backward,
# dP and the softmax backward) run on chunks of about 2^20 scores, so the softmax reads scores
# still in cache. Measured on the AMD EPYC Zen 5 VM: the step before (646463c, whole batch at once)
# and after (alternating, bf16 5 rounds and fp32 3), then full attention against PyTorch's bf16
# autocast. Run it on an idle machine; outputs go next to this script.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=results/2026-11-26_zen5_score_chunks
before=${BEFORE:-/tmp/runbin/linformer_646463c}  # the binary before this change
after=${AFTER:-build/linformer}
PRECISION=bf16 ROUNDS=5 scripts/bench_before_after.sh "$before" "$after" "$out/bf16"
PRECISION=fp32 ROUNDS=3 scripts/bench_before_after.sh "$before" "$after" "$out/fp32"
PRECISION=bf16 ROUNDS=5 STEPS=8 scripts/bench_compare.sh recipes/bench/S_full.toml \
  > "$out/S_full_bf16.txt" 2>&1

#!/usr/bin/env bash
# bf16 training with the attention scores and dP as bf16 results (2026-11-25, second session): commit 542e52e.
# Before (BEFORE binary) against after (AFTER binary), bf16, 5 rounds; then build/linformer (the
# after commit) side by side with PyTorch's bf16 autocast in the three configurations. Run it on
# an idle machine; the outputs go next to this script.
# Usage: BEFORE=path AFTER=path results/2026-11-25_bf16_scores/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
out=results/2026-11-25_bf16_scores
PRECISION=bf16 ROUNDS=5 scripts/bench_before_after.sh "$BEFORE" "$AFTER" "$out"
PRECISION=bf16 scripts/bench_compare_configs.sh "$out"
# fp32 side by side, and the accuracy check.
PRECISION=fp32 scripts/bench_compare_configs.sh "$out"
scripts/bf16_check.sh 2>&1 | grep -E "validation perplexity|final validation|precision:" > "$out/bf16_check.txt"

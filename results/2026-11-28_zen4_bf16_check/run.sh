#!/usr/bin/env bash
# scripts/bf16_check.sh as the performance issue's checker runs it (the default recipe, all of its
# updates, seed 1), on main after the changes of 2026-11-28 (the last block's masked rows, GELU's
# kept derivative, the residual's gradient passed on, dense K~ and V~ blocks) -> bf16_check.txt.
# Usage: results/2026-11-28_zen4_bf16_check/run.sh   (an avx512_bf16 machine, idle)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=results/2026-11-28_zen4_bf16_check
scripts/machine_info.sh > "$out/machine.txt"
build/linformer --version >> "$out/machine.txt"
dir=$(mktemp -d)
BF16_CHECK_DIR=$dir LINFORMER=build/linformer scripts/bf16_check.sh > "$out/bf16_check.txt" 2>&1 || echo "exit $?" >> "$out/bf16_check.txt"
cp "$dir/fp32/metrics.csv" "$out/fp32_metrics.csv"
cp "$dir/bf16/metrics.csv" "$out/bf16_metrics.csv"
rm -rf "$dir"

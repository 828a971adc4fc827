#!/usr/bin/env bash
# bf16 training fusions (2026-11-25, second session): commits fba85bd, a9bd9b4, 20df547.
# Before (BEFORE binary) against after (AFTER binary), bf16, 5 rounds; then build/linformer (the
# after commit) side by side with PyTorch's bf16 autocast in the three configurations. Run it on
# an idle machine; the outputs go next to this script.
# Usage: BEFORE=path AFTER=path results/2026-11-25_bf16_fusions/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
out=results/2026-11-25_bf16_fusions
PRECISION=bf16 ROUNDS=5 scripts/bench_before_after.sh "$BEFORE" "$AFTER" "$out"
PRECISION=bf16 scripts/bench_compare_configs.sh "$out"

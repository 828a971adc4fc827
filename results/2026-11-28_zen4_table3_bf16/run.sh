#!/usr/bin/env bash
# The paper's Table 3 grid in bf16 beside fp32 (scripts/table3_grid.sh); run on an idle Zen 4
# avx512_bf16 machine; the outputs go next to this script.
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/table3_grid.sh results/2026-11-28_zen4_table3_bf16

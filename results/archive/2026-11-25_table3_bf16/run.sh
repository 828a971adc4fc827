#!/usr/bin/env bash
# The paper's Table 3 grid in bf16 beside fp32 (scripts/table3_grid.sh); run it on an idle
# avx512_bf16 machine; the outputs go next to this script.
set -euo pipefail
cd "$(dirname "$0")/../../.."
scripts/table3_grid.sh results/archive/2026-11-25_table3_bf16

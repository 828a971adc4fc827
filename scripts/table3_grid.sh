#!/usr/bin/env bash
# The paper's Table 3 grid in bf16 beside fp32 on an avx512_bf16 machine: `linformer bench attention`
# once per precision on the same reduced grid (n 512–8192, k 128–1024; the full grid to n = 65,536
# takes about half an hour per precision) with the encoder of the fp32 Table 3
# (recipes/bench/S.toml: 4 layers, d 256, 4 heads, FFN 1024; docs/performance.md), then
# scripts/table3_precisions.py puts the two side by side. Writes
# OUT/{machine.txt, table3_fp32.{md,csv}, table3_bf16.{md,csv}, progress_*.log, side_by_side.md}.
# Run it on an idle machine.
# Usage: scripts/table3_grid.sh OUT_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/table3_grid.sh OUT_DIR}
mkdir -p "$out"
grid=(--recipe recipes/bench/S.toml --lengths 512 1024 2048 4096 8192 --ks 128 256 512 1024 --time-limit 30 --repeats 3)
scripts/machine_info.sh > "$out/machine.txt"
for precision in fp32 bf16; do
  start=$(date +%s)
  build/linformer bench attention "${grid[@]}" --precision "$precision" --csv "$out/table3_$precision.csv" \
    > "$out/table3_$precision.md" 2> "$out/progress_$precision.log"
  echo "wall $(( $(date +%s) - start )) s" >> "$out/progress_$precision.log"
done
scripts/table3_precisions.py "$out/table3_fp32.csv" "$out/table3_bf16.csv" > "$out/side_by_side.md"

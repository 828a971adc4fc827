#!/usr/bin/env bash
# S/M as recipes/bench/*.toml since 2026-11-28 (the same resolved recipe as the --set chain this was measured with)
# The last block computing only the masked rows (MlmModel::forward_backward, QueryRows), measured
# on an AMD EPYC with avx512_bf16 (the performance issue's kind of machine), idle, in one run:
#   1. bench train against bench train --every-row (the same binary, alternating): config S
#      (Linformer k = 128 and full attention) and M, bf16 and fp32;
#   2. against PyTorch (scripts/bench_compare.sh), bf16 autocast and fp32, S Linformer, S full, M.
# Usage: results/2026-11-28_zen4_last_block_rows/run.sh   (runs build/linformer)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=results/2026-11-28_zen4_last_block_rows
scripts/machine_info.sh > "$out/machine.txt"
build/linformer --version >> "$out/machine.txt"
# 1. Selected rows against every row: one line per run (throughput, last block rows).
side_by_side() {  # name rounds steps precision recipe [--set ...]
  local name=$1 rounds=$2 steps=$3 precision=$4 recipe=$5
  shift 5
  for round in $(seq "$rounds"); do
    for rows in selected every; do
      flag=(); [ $rows = every ] && flag=(--every-row)
      line=$(build/linformer bench train --recipe "$recipe" "$@" \
               --set train.precision="$precision" --steps "$steps" "${flag[@]}" |
             grep -E '^throughput|^last block' | tr '\n' ' ')
      echo "$name round $round $rows: $line"
    done
  done
}
{
  side_by_side "S linformer bf16" 5 8 bf16 recipes/bench/S.toml
  side_by_side "S full bf16" 5 8 bf16 recipes/bench/S_full.toml
  side_by_side "M bf16" 3 4 bf16 recipes/bench/M.toml
  side_by_side "S linformer fp32" 3 8 fp32 recipes/bench/S.toml
  side_by_side "S full fp32" 3 8 fp32 recipes/bench/S_full.toml
  side_by_side "M fp32" 3 4 fp32 recipes/bench/M.toml
} > "$out/selected_vs_every_row.txt"
# 2. Against PyTorch.
for precision in bf16 fp32; do
  rounds=5; [ $precision = fp32 ] && rounds=3
  PRECISION=$precision ROUNDS=$rounds STEPS=8 scripts/bench_compare.sh recipes/bench/S.toml \
    > "$out/torch_S_linformer_$precision.txt" 2>&1
  PRECISION=$precision ROUNDS=$rounds STEPS=8 scripts/bench_compare.sh recipes/bench/S_full.toml \
    > "$out/torch_S_full_$precision.txt" 2>&1
  PRECISION=$precision ROUNDS=3 STEPS=4 scripts/bench_compare.sh recipes/bench/M.toml \
    > "$out/torch_M_$precision.txt" 2>&1
done

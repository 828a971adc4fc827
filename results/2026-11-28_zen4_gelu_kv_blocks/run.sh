#!/usr/bin/env bash
# S/M as recipes/bench/*.toml since 2026-11-28 (the same resolved recipe as the --set chain this was measured with)
# Three cuts of the training step (GELU keeps its derivative, no residual-gradient copy without
# dropout, Linformer's f32 K̃, Ṽ cache in dense blocks), measured on an AMD EPYC with avx512_bf16,
# idle:
#   1. the step before (main at 92d3157, built apart) and after, alternating: config S (Linformer
#      k = 128 and full attention) in fp32 and bf16 (scripts/bench_before_after.sh), and M;
#   2. the fp32 K̃/Ṽ projection's oneDNN kernel and time per step (ONEDNN_VERBOSE) before and after;
#   3. against PyTorch (scripts/bench_compare.sh), bf16 autocast and fp32, S Linformer, S full, M.
# Usage: results/2026-11-28_zen4_gelu_kv_blocks/run.sh BEFORE_BINARY   (after: build/linformer)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=results/2026-11-28_zen4_gelu_kv_blocks
before=${1:?usage: run.sh BEFORE_BINARY}
after=build/linformer
scripts/machine_info.sh > "$out/machine.txt"
"$after" --version >> "$out/machine.txt"
# 1. Before and after.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for precision in fp32 bf16; do
  PRECISION=$precision ROUNDS=5 scripts/bench_before_after.sh "$before" "$after" "$tmp/$precision"
  cp "$tmp/$precision/before_after.txt" "$out/before_after_S_$precision.txt"
done
for precision in fp32 bf16; do
  for round in 1 2 3; do
    for which in before after; do
      bin=$before; [ $which = after ] && bin=$after
      echo "M $precision round $round $which: $("$bin" bench train --recipe recipes/bench/M.toml \
        --set train.precision=$precision --steps 4 | grep '^throughput')"
    done
  done
done > "$out/before_after_M.txt"
# 2. The products of an fp32 step of S, per oneDNN primitive (ms per step over 9 steps).
for which in before after; do
  bin=$before; [ $which = after ] && bin=$after
  ONEDNN_VERBOSE=1 "$bin" bench train --recipe recipes/bench/S.toml \
    --set train.precision=fp32 --steps 9 > "$tmp/verbose.txt" 2>&1
  /usr/bin/python3 results/2026-11-27_zen5_matmul_layouts/sum_verbose.py "$tmp/verbose.txt" 9 > "$out/products_S_fp32_$which.txt"
done
# 3. Against PyTorch.
for precision in bf16 fp32; do
  rounds=5; [ $precision = fp32 ] && rounds=3
  PRECISION=$precision ROUNDS=$rounds STEPS=8 scripts/bench_compare.sh recipes/bench/S.toml \
    > "$out/torch_S_linformer_$precision.txt" 2>&1
  PRECISION=$precision ROUNDS=$rounds STEPS=8 scripts/bench_compare.sh recipes/bench/S_full.toml \
    > "$out/torch_S_full_$precision.txt" 2>&1
  PRECISION=$precision ROUNDS=3 STEPS=4 scripts/bench_compare.sh recipes/bench/M.toml \
    > "$out/torch_M_$precision.txt" 2>&1
done
# M again, 5 rounds each.
for precision in bf16 fp32; do
  PRECISION=$precision ROUNDS=5 STEPS=4 scripts/bench_compare.sh recipes/bench/M.toml \
    > "$out/torch_M_${precision}_again.txt" 2>&1
done

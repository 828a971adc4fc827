#!/usr/bin/env bash
# S/M as recipes/bench/*.toml since 2026-11-28 (the same resolved recipe as the --set chain this was measured with)
# The performance issue's checks on an AMD EPYC with avx512_bf16 (there: Zen 5), after the bf16 fusions
# measured on the Intel AMX VM since 2026-11-25: the training step in fp32 and bf16 against
# PyTorch (fp32, bf16 autocast) side by side (scripts/bench_compare.sh: the two programs
# alternate, ROUNDS rounds, medians) for configs S (Linformer k = 128 headwise, full attention)
# and M; bench train's split by stage and kernel per precision; throughput beside a busy
# process; then the bf16 check on the default recipe's whole run. Run it on an idle machine;
# the outputs go next to this script.
# S = {vocab 8000, n 512, d 256, 4 heads, FFN 1024, 4 layers, batch 8, 15% masked, dropout 0};
# M = S with d 512, 8 heads, FFN 2048, 6 layers.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=results/2026-11-26_zen5_bf16
rounds=${ROUNDS:-5}
scripts/machine_info.sh > "$out/machine.txt"
build/linformer --version >> "$out/machine.txt"
for precision in fp32 bf16; do
  PRECISION=$precision ROUNDS=$rounds STEPS=8 scripts/bench_compare.sh recipes/bench/S.toml \
    > "$out/S_linformer_$precision.txt" 2>&1
  PRECISION=$precision ROUNDS=$rounds STEPS=8 scripts/bench_compare.sh recipes/bench/S_full.toml \
    > "$out/S_full_$precision.txt" 2>&1
  PRECISION=$precision ROUNDS=$rounds STEPS=4 scripts/bench_compare.sh recipes/bench/M.toml \
    > "$out/M_linformer_$precision.txt" 2>&1
done
# One bench train output per precision and configuration, with the split by stage and kernel family.
for precision in fp32 bf16; do
  build/linformer bench train --recipe recipes/bench/S.toml --set train.precision=$precision --steps 8 > "$out/S_bench_train_$precision.txt"
  build/linformer bench train --recipe recipes/bench/M.toml --set train.precision=$precision --steps 4 > "$out/M_bench_train_$precision.txt"
done
# Beside one busy process (the program's default wait policy), the base recipe as in
# results/2026-11-25_shared_cpu/.
build/linformer bench train --recipe recipes/brown/base.toml --steps 12 --beside-busy-process \
  > "$out/shared_cpu.txt" 2>&1
scripts/bf16_check.sh > "$out/bf16_check.txt" 2>&1

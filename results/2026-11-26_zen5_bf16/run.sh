#!/usr/bin/env bash
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
S=(--set model.d_model=256 --set model.heads=4 --set model.ffn_dim=1024 --set model.layers=4
   --set masking.probability=0.15 --set model.k=128)
M=(--set model.d_model=512 --set model.heads=8 --set model.ffn_dim=2048 --set model.layers=6
   --set masking.probability=0.15 --set model.k=128)
scripts/machine_info.sh > "$out/machine.txt"
build/linformer --version >> "$out/machine.txt"
for precision in fp32 bf16; do
  PRECISION=$precision ROUNDS=$rounds STEPS=8 scripts/bench_compare.sh recipes/brown/base.toml "${S[@]}" \
    > "$out/S_linformer_$precision.txt" 2>&1
  PRECISION=$precision ROUNDS=$rounds STEPS=8 scripts/bench_compare.sh recipes/brown/base.toml "${S[@]}" \
    --set model.attention=full > "$out/S_full_$precision.txt" 2>&1
  PRECISION=$precision ROUNDS=$rounds STEPS=4 scripts/bench_compare.sh recipes/brown/base.toml "${M[@]}" \
    > "$out/M_linformer_$precision.txt" 2>&1
done
# One bench train output per precision and configuration, with the split by stage and kernel family.
for precision in fp32 bf16; do
  build/linformer bench train --recipe recipes/brown/base.toml "${S[@]}" --set model.dropout=0 \
    --set model.attention_dropout=0 --set train.precision=$precision --steps 8 > "$out/S_bench_train_$precision.txt"
  build/linformer bench train --recipe recipes/brown/base.toml "${M[@]}" --set model.dropout=0 \
    --set model.attention_dropout=0 --set train.precision=$precision --steps 4 > "$out/M_bench_train_$precision.txt"
done
# Beside one busy process (the program's default wait policy), the base recipe as in
# results/2026-11-25_shared_cpu/.
build/linformer bench train --recipe recipes/brown/base.toml --steps 12 --beside-busy-process \
  > "$out/shared_cpu.txt" 2>&1
scripts/bf16_check.sh > "$out/bf16_check.txt" 2>&1

#!/usr/bin/env bash
# S/M as recipes/bench/*.toml since 2026-11-28 (the same resolved recipe as the --set chain this was measured with)
# The fair comparison again, in a later session on the same kind of VM: the same step on both
# sides (AdamW included), PyTorch at its default OpenMP waiting, 5 rounds for each of the six
# configurations (S Linformer k = 128, S full attention, M; bf16 autocast and fp32) ->
# torch_{S_linformer,S_full,M}_{bf16,fp32}.txt.
# Usage: results/2026-11-28_zen4_fair_repeat/run.sh   (an idle machine)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=results/2026-11-28_zen4_fair_repeat
scripts/machine_info.sh > "$out/machine.txt"
build/linformer --version >> "$out/machine.txt"
export ROUNDS=5
for precision in bf16 fp32; do
  export PRECISION=$precision
  STEPS=8 scripts/bench_compare.sh recipes/bench/S.toml > "$out/torch_S_linformer_$precision.txt" 2>&1
  STEPS=8 scripts/bench_compare.sh recipes/bench/S_full.toml \
    > "$out/torch_S_full_$precision.txt" 2>&1
  STEPS=4 scripts/bench_compare.sh recipes/bench/M.toml > "$out/torch_M_$precision.txt" 2>&1
done

#!/usr/bin/env bash
# S/M as recipes/bench/*.toml since 2026-11-28 (the same resolved recipe as the --set chain this was measured with)
# Against PyTorch with the same step on both sides: forward, backward and AdamW (before a766d55
# scripts/bench_torch.py timed PyTorch's forward + backward only, against our whole step).
# bench_compare.sh reports both the whole step and forward + backward alone, alternating the two
# programs, 5 rounds per configuration: config S (Linformer k = 128 and full attention) and M,
# bf16 (PyTorch's autocast) and fp32. Run it on an idle machine.
# Usage: results/archive/2026-11-28_zen4_same_step/run.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=results/archive/2026-11-28_zen4_same_step
scripts/machine_info.sh > "$out/machine.txt"
build/linformer --version >> "$out/machine.txt"
for precision in bf16 fp32; do
  export PRECISION=$precision ROUNDS=5
  STEPS=8 scripts/bench_compare.sh recipes/bench/S.toml > "$out/S_linformer_$precision.txt" 2>&1
  STEPS=8 scripts/bench_compare.sh recipes/bench/S_full.toml \
    > "$out/S_full_$precision.txt" 2>&1
  STEPS=4 scripts/bench_compare.sh recipes/bench/M.toml > "$out/M_$precision.txt" 2>&1
done

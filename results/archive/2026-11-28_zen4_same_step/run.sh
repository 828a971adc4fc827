#!/usr/bin/env bash
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
S=(--set model.d_model=256 --set model.heads=4 --set model.ffn_dim=1024 --set model.layers=4
   --set masking.probability=0.15 --set model.k=128)
M=(--set model.d_model=512 --set model.heads=8 --set model.ffn_dim=2048 --set model.layers=6)
for precision in bf16 fp32; do
  export PRECISION=$precision ROUNDS=5
  STEPS=8 scripts/bench_compare.sh recipes/brown/base.toml "${S[@]}" > "$out/S_linformer_$precision.txt" 2>&1
  STEPS=8 scripts/bench_compare.sh recipes/brown/base.toml "${S[@]}" --set model.attention=full \
    > "$out/S_full_$precision.txt" 2>&1
  STEPS=4 scripts/bench_compare.sh recipes/brown/base.toml "${S[@]}" "${M[@]}" > "$out/M_$precision.txt" 2>&1
done

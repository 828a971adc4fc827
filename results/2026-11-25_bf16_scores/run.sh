#!/usr/bin/env bash
# bf16 scores in training (2026-11-25, second session): before (BEFORE binary) against after (AFTER
# binary), `bench train` on config S in bf16, Linformer and full attention, alternating, 5
# rounds; then the after binary side by side with PyTorch (scripts/bench_compare.sh, bf16 autocast)
# for S Linformer, S full attention and M. Run on an idle machine; outputs go next to this script.
# Usage: BEFORE=path AFTER=path results/2026-11-25_bf16_fusions/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
out=results/2026-11-25_bf16_scores
S=(--recipe recipes/brown/base.toml --set model.d_model=256 --set model.heads=4 --set model.ffn_dim=1024
   --set model.layers=4 --set masking.probability=0.15 --set model.k=128 --set model.dropout=0
   --set model.attention_dropout=0 --set train.precision=bf16 --steps 8)
scripts/machine_info.sh > "$out/machine.txt"
{
  echo "before: $($BEFORE --version | head -1); after: $($AFTER --version | head -1)"
  for round in 1 2 3 4 5; do
    for attention in linformer full; do
      for which in before after; do
        bin=$BEFORE; [ "$which" = after ] && bin=$AFTER
        $bin bench train "${S[@]}" --set model.attention=$attention > "$out/last_$which.txt"
        echo "round $round $attention $which: $(grep '^throughput' "$out/last_$which.txt")"
      done
    done
  done
  echo "--- the after binary's last full-attention step:"; cat "$out/last_after.txt"
} > "$out/before_after.txt"
rm -f "$out"/last_*.txt

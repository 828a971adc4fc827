#!/usr/bin/env bash
# bf16 against fp32 on a short pretraining run: the same recipe, data, seed and number of
# updates in train.precision = fp32 and = bf16; prints both final validation perplexities and
# their relative difference, and fails (exit 1) when they differ by more than 1%.
# Needs a CPU with avx512_bf16; elsewhere the bf16 run would quietly be an fp32 run, so the
# script says so and exits 2 without training (ALLOW_FALLBACK=1 runs it anyway, to test the
# plumbing; it still exits 2).
# Usage: scripts/bf16_check.sh [recipe] [updates]   (defaults: recipes/brown/default.toml, 300)
set -euo pipefail
cd "$(dirname "$0")/.."
recipe=${1:-recipes/brown/default.toml}
updates=${2:-300}
has_bf16=1
grep -qw avx512_bf16 /proc/cpuinfo || has_bf16=0
if [ "$has_bf16" = 0 ]; then
  echo "bf16_check: this CPU has no avx512_bf16, so train.precision = \"bf16\" runs in fp32: nothing to compare." >&2
  [ "${ALLOW_FALLBACK:-0}" = 1 ] || exit 2
  echo "bf16_check: ALLOW_FALLBACK=1: running both anyway (both are fp32)." >&2
fi

scripts/build.sh
[ -f data/brown/.complete ] || scripts/get_brown.sh
build/linformer prepare --recipe "$recipe"
out=runs/bf16_check
# A recipe's sequence-length warm-up is scaled to the short run: its first half on short blocks.
short_seq_len=$(build/linformer train --recipe "$recipe" --dump-recipe | sed -n 's/^short_seq_len = //p')
warm_up=()
if [ "${short_seq_len:-0}" != 0 ]; then
  if [ "$updates" -ge 2 ]; then warm_up=(--set train.short_seq_updates=$((updates / 2)))
  else warm_up=(--set train.short_seq_len=0 --set train.short_seq_updates=0); fi
fi
for precision in fp32 bf16; do
  rm -rf "${out:?}/$precision"
  build/linformer train --recipe "$recipe" --run-dir "$out/$precision" "${warm_up[@]}" \
    --set train.precision="$precision" --set train.max_updates="$updates" --set train.max_tokens=0 \
    --set train.max_minutes=0 --set validation.every=0 --set validation.patience=0
done

status=0
/usr/bin/python3 scripts/compare_valid_ppl.py "$out/fp32" "$out/bf16" --max-relative 0.01 || status=$?
[ "$has_bf16" = 1 ] || exit 2
exit $status

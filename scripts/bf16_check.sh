#!/usr/bin/env bash
# bf16 against fp32 on a pretraining run: the same recipe, data, seed and number of updates in
# train.precision = fp32 and = bf16; prints both runs' mean validation perplexity over the last
# fifth of the run (its last 5 of 20 validations) and the final one, and fails (exit 1) when the means
# differ by more than 1%.
# Needs a CPU with avx512_bf16; elsewhere the bf16 run would quietly be an fp32 run, so the
# script says so and exits 2 without training (ALLOW_FALLBACK=1 runs it anyway, to test the
# plumbing; it still exits 2).
# Usage: scripts/bf16_check.sh [recipe] [updates] [--set key=value ...]
#   defaults: recipes/brown/default.toml, all of the recipe's train.max_updates (the main job:
#   about 7 minutes a precision on 2 cores with AMX, more elsewhere). With fewer updates, the
#   recipe's learning-rate warmup and sequence-length warm-up are scaled by the same fraction,
#   so the short run still leaves the warmup and trains at the recipe's learning rate: a check
#   inside the warmup, at a small learning rate, compares models that have barely moved.
#   Further arguments go to both training runs (e.g. --set seed=2: one fp32/bf16 pair cannot tell
#   bf16's effect from two trajectories landing apart as two seeds would; pairs at other seeds can).
#   SEEDS="1 2 3" trains a pair per seed and compares the means over the pairs (where one pair
#   lands varies by about 1.5% with the trajectory: results/2026-11-26_zen5_bf16_probs/).
#   BF16_CHECK_DIR chooses the runs' directory (default runs/bf16_check; fp32/ and bf16/ inside);
#   LINFORMER a binary to use instead of building build/linformer (so a check can run while the
#   tree changes); PRECISIONS=bf16 trains only the bf16 run and compares it with the fp32 run
#   already in the directory (after a change that leaves fp32 as it was).
set -euo pipefail
cd "$(dirname "$0")/.."
recipe=${1:-recipes/brown/default.toml}
updates_arg=${2:-}
shift $(($# < 2 ? $# : 2))
extra=("$@")
has_bf16=1
grep -qw avx512_bf16 /proc/cpuinfo || has_bf16=0
if [ "$has_bf16" = 0 ]; then
  echo "bf16_check: this CPU has no avx512_bf16, so train.precision = \"bf16\" runs in fp32: nothing to compare." >&2
  [ "${ALLOW_FALLBACK:-0}" = 1 ] || exit 2
  echo "bf16_check: ALLOW_FALLBACK=1: running both anyway (both are fp32)." >&2
fi

linformer=${LINFORMER:-build/linformer}
[ -n "${LINFORMER:-}" ] || scripts/build.sh
[ -f data/brown/.complete ] || scripts/get_brown.sh
"$linformer" prepare --recipe "$recipe"
out=${BF16_CHECK_DIR:-runs/bf16_check}
recipe_value() {  # a key of the resolved recipe (each of these keys occurs in one section only)
  "$linformer" train --recipe "$recipe" --dump-recipe | sed -n "s/^$1 = \([0-9]*\).*/\1/p"
}
max_updates=$(recipe_value max_updates)
updates=${updates_arg:-$max_updates}
if ! [[ "$updates" =~ ^[1-9][0-9]*$ ]]; then
  echo "bf16_check: updates must be a positive integer, not '$updates' (the recipe $recipe has" \
    "train.max_updates = ${max_updates:-none}; give the number of updates as the second argument)" >&2
  exit 1
fi
scaled() { [ "${max_updates:-0}" -gt 0 ] && echo $(($1 * updates / max_updates)) || echo "$1"; }
warmup_updates=$(scaled "$(recipe_value warmup_updates)")
short_seq_updates=$(scaled "$(recipe_value short_seq_updates)")
short=(--set optim.warmup_updates="$warmup_updates")
if [ "$short_seq_updates" -ge 1 ] && [ "$short_seq_updates" -lt "$updates" ]; then
  short+=(--set train.short_seq_updates="$short_seq_updates")
else
  short+=(--set train.short_seq_len=0 --set train.short_seq_updates=0)
fi
echo "bf16_check: $recipe, $updates updates (learning-rate warmup $warmup_updates, sequence-length" \
  "warm-up ${short_seq_updates}), in ${PRECISIONS:-fp32 and bf16}${SEEDS:+ at seeds $SEEDS}${extra[*]+, with ${extra[*]}}, into $out" >&2
# Validate 20 times and compare the mean of the last 5 (the run's last fifth): fp32 and bf16
# arithmetic put the two runs on trajectories that drift apart and back, so a single final
# validation compares where each happened to be (scripts/compare_valid_ppl.py --last).
every=$((updates / 20)) last=5
[ "$every" -ge 1 ] || { every=0; last=1; }
precisions=${PRECISIONS:-fp32 bf16}
# SEEDS="1 2 3": a pair per seed (in $out/seed<N>/), judged by the mean over the pairs.
seeds=${SEEDS:-}
for seed in $seeds; do
  [[ "$seed" =~ ^[0-9]+$ ]] || { echo "bf16_check: SEEDS must be non-negative integers, not '$seed'" >&2; exit 1; }
done
pair_dirs=("$out")
if [ -n "$seeds" ]; then
  pair_dirs=()
  for seed in $seeds; do pair_dirs+=("$out/seed$seed"); done
fi
case "$precisions" in
  "fp32 bf16") ;;
  bf16)
    for dir in "${pair_dirs[@]}"; do
      [ -f "$dir/fp32/metrics.jsonl" ] || { echo "bf16_check: PRECISIONS=bf16 needs the fp32 run in $dir/fp32" >&2; exit 1; }
    done ;;
  *) echo "bf16_check: PRECISIONS must be 'fp32 bf16' or 'bf16', not '$precisions'" >&2; exit 1 ;;
esac
compared=()
for dir in "${pair_dirs[@]}"; do
  seed_set=()
  [ "$dir" = "$out" ] || seed_set=(--set seed="${dir##*/seed}")
  for precision in $precisions; do
    rm -rf "${dir:?}/$precision"
    "$linformer" train --recipe "$recipe" --run-dir "$dir/$precision" "${short[@]}" \
      --set train.precision="$precision" --set train.max_updates="$updates" --set train.max_tokens=0 \
      --set train.max_minutes=0 --set validation.every="$every" --set validation.patience=0 \
      ${seed_set[@]+"${seed_set[@]}"} ${extra[@]+"${extra[@]}"}
  done
  compared+=("$dir/fp32" "$dir/bf16")
done

status=0
/usr/bin/python3 scripts/compare_valid_ppl.py "${compared[@]}" --max-relative 0.01 --last "$last" || status=$?
[ "$has_bf16" = 1 ] || exit 2
exit $status

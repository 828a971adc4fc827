#!/usr/bin/env bash
# The main job: build, fetch the Brown corpus, prepare it, pretrain a recipe (default:
# recipes/brown/default.toml), then plot its validation perplexity, fill a mask with it and
# score the test split with ordered and with shuffled words (how much it uses word order).
# Re-running continues the run from its newest checkpoint.
# Usage: scripts/pretrain.sh [recipe] [extra `linformer train` arguments...]
set -euo pipefail
cd "$(dirname "$0")/.."
recipe=${1:-recipes/brown/default.toml}
shift || true
scripts/build.sh
[ -f data/brown/.complete ] || scripts/get_brown.sh
build/linformer prepare --recipe "$recipe"
build/linformer train --recipe "$recipe" --resume auto "$@"

name=$(build/linformer train --recipe "$recipe" --dump-recipe | sed -n 's/^name = "\(.*\)"$/\1/p')
run_dir=runs/$name
/usr/bin/python3 scripts/plot_curves.py "$run_dir" --out "$run_dir/curves" --title "$name: validation perplexity"
checkpoint=$(ls -d "$run_dir"/checkpoints/checkpoint_* | sort | tail -n 1)
echo
echo "fill-mask with $checkpoint:"
build/linformer fill-mask --checkpoint "$checkpoint" --top-k 5 \
  "He put the <mask> on the table and sat down." "The jury said the <mask> was well conducted." \
  "She opened the <mask> and looked out at the garden."
echo
# Near 1×, the model predicts from which words occur together, not from their order (README, Results).
echo "the test split, and the same masked words with each sentence's words shuffled:"
build/linformer eval --checkpoint "$checkpoint" --split test --shuffle-words
echo
echo "run directory: $run_dir (metrics.csv, metrics.jsonl, train.log, curves.png, checkpoints/)"

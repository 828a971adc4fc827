#!/usr/bin/env bash
# Reruns pretraining experiments and regenerates every figure and table from the metrics files.
# Usage: scripts/run_experiments.sh [EXPERIMENT ...] [--force] [--manifest FILE] [--runs-dir DIR]
#                                   [--results DIR] [--binary PATH]
#        scripts/run_experiments.sh --list        the experiments and which runs are done
#        scripts/run_experiments.sh --report-only  figures and tables only, no training
#        scripts/run_experiments.sh --word-order   measure how much finished runs use word order
#                                                  (eval --shuffle-words on their best checkpoint)
#        scripts/run_experiments.sh --same-targets  score finished runs' best checkpoints on the same
#                                                  validation targets at every n (eval --same-targets)
#        scripts/run_experiments.sh --verify RUN... [--updates N]  train published runs again up to
#                                                  update N (default: the first validation) and
#                                                  compare every logged row with the published curve
# Default manifest recipes/brown/experiments.toml, runs in runs/experiments/, results in
# results/brown/. Without --binary it builds build/linformer first and fetches the Brown corpus.
# Runs whose results exist are skipped; an interrupted run continues from its last checkpoint.
set -euo pipefail
cd "$(dirname "$0")/.."
command=run
args=()
for a in "$@"; do
  case "$a" in
    --list) command=list ;;
    --report-only) command=report ;;
    --word-order) command=word-order ;;
    --same-targets) command=same-targets ;;
    --verify) command=verify ;;
    *) args+=("$a") ;;
  esac
done
if { [ "$command" = run ] || [ "$command" = verify ]; } && [[ " ${args[*]-} " != *" --binary"* ]]; then
  scripts/build.sh
  [ -f data/brown/.complete ] || scripts/get_brown.sh
fi
exec /usr/bin/python3 scripts/experiments.py "$command" ${args[@]+"${args[@]}"}

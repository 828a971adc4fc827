#!/usr/bin/env bash
# The word-pairs experiment (scripts/word_pairs.py): five models at five seeds, 4,000 updates each
# on a made-up corpus where every word is written twice; about 15 s a run on one thread. Writes
# runs/*/ (recipe, metrics) and summary.json here, then prints the README's table.
set -euo pipefail
cd "$(dirname "$0")/../.."
binary=${1:-build/linformer}
OMP_NUM_THREADS=1 /usr/bin/python3 scripts/word_pairs.py run results/word_pairs --binary "$binary" \
  --seeds 1 2 3 4 5 --updates 4000
/usr/bin/python3 scripts/word_pairs.py table results/word_pairs

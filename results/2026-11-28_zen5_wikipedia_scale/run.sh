#!/usr/bin/env bash
# Every measurement of this folder, in order, on an otherwise idle machine (about 80 minutes on
# 2 cores). CORPUS_DIR (default /work/scale_corpus) holds the generated corpora and the prepared
# data (about 17 GB at the end); nothing large is written here.
#   1. bench train, configs S and M at vocabularies 8000, 32000, 50265, fp32 and bf16, rounds
#      VOCAB_ROUNDS (default "1 2"; rounds 3 and 4 ran after stage 5: round 1 overlapped other work)
#   2. bench train on each recipe of recipes/wikipedia/ (one micro-batch a step), fp32 and bf16
#   3. scripts/bench_prepare.sh with recipes/wikipedia/base.toml at 10 MB, 100 MB, 1 GB, 10 GB
#   4. encode_vs_spm.sh: our encoding against spm_encode, 1 and 2 cores, 3 rounds
#   5. train_10G.sh: 200 updates on the 10 GB corpus, killed and resumed
# STAGES (default "1 2 3 4 5") picks some of them.
set -euo pipefail
stages=" ${STAGES:-1 2 3 4 5} "
stage() { [[ $stages == *" $1 "* ]]; }
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
corpus=${CORPUS_DIR:-/work/scale_corpus}
binary=$root/build/linformer
cd "$root"
scripts/machine_info.sh > "$here/machine.txt"
mkdir -p "$here/vocab" "$here/recipes"
stage 1 && for round in ${VOCAB_ROUNDS:-1 2}; do
  for config in S M; do
    for precision in fp32 bf16; do
      for vocab in 8000 32000 50265; do
        "$binary" bench train --recipe "recipes/bench/$config.toml" --set "data.vocab_size=$vocab" \
          --set "train.precision=$precision" --warmup 2 --steps 6 \
          --json "$here/vocab/${config}_${precision}_v${vocab}_r$round.json" > /dev/null
      done
    done
  done
done
stage 2 && for recipe in recipes/wikipedia/*.toml; do
  name=$(basename "$recipe" .toml)
  [ "$name" = base ] && continue
  steps=5
  case $name in roberta_base*) steps=3 ;; esac
  for precision in fp32 bf16; do
    "$binary" bench train --recipe "$recipe" --set "train.precision=$precision" --set train.accumulation=1 \
      --warmup 1 --steps "$steps" --json "$here/recipes/${name}_$precision.json" > "$here/recipes/${name}_$precision.txt"
  done
done
for size in 10M 100M 1G 10G; do  # the corpora (cached), before any timing
  [ -f "$corpus/wiki_$size.xml" ] || /usr/bin/python3 scripts/make_corpus.py "$corpus/wiki_$size.xml" "$size" --format wikiextractor --seed 1
done
stage 3 && scripts/bench_prepare.sh -r recipes/wikipedia/base.toml -c "$corpus" -o "$here/prepare" -t 2 -k 10M 100M 1G 10G
[ -f "$corpus/text_100M.txt" ] || /usr/bin/python3 scripts/make_corpus.py "$corpus/text_100M.txt" 100M --format text --seed 1
stage 4 && ROUNDS=3 "$here/encode_vs_spm.sh" "$corpus/text_100M.txt" "$corpus/prepared_1G/spm.model" "$here/encode_vs_spm.jsonl" 2
stage 5 && "$here/train_10G.sh" "$corpus/wiki_10G.xml" "$corpus/prepared_10G" "$here/train_10G"

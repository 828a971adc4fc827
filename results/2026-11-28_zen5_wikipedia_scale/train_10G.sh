#!/usr/bin/env bash
# Training on the 10 GB corpus's prepared data (recipes/wikipedia/small_n512_k128.toml, shortened:
# 200 updates of 16 blocks of 512, the sequence-length warm-up's first 50 on blocks of 128, the
# default validation bound, a checkpoint and a validation every 100 updates): a straight run, then
# the same run killed (SIGKILL) past update 150 and resumed from its checkpoint at 100. RSS is
# sampled every 5 s. Writes OUT/straight/, OUT/resumed/ (metrics and logs; checkpoints removed) and
# OUT/rss_*.tsv.
#
# Usage: train_10G.sh CORPUS_FILE PREPARED_DIR OUT   (env RUNS: see below)
set -euo pipefail
corpus=$1 prepared=$2 out=$3
root=$(cd "$(dirname "$0")/../.." && pwd)
binary=${LINFORMER_BIN:-$root/build/linformer}
runs=${RUNS:-$(mktemp -d "$(dirname "$prepared")/train_10G.XXXXXX")}
mkdir -p "$out"
args=(--recipe "$root/recipes/wikipedia/small_n512_k128.toml" --set "data.corpus=[\"$corpus\"]"
      --set "data.prepared_dir=$prepared" --set train.accumulation=1 --set train.max_updates=200
      --set train.short_seq_updates=50 --set optim.warmup_updates=50 --set validation.every=100
      --set checkpoint.every=100 --set logging.every=10 --set threads=2)
sample_rss() {  # pid file: RSS of the process every 5 s until it ends
  echo -e "seconds\trss_mb" > "$2"
  local start=$SECONDS kb
  while kb=$(awk '/VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null) && [ -n "$kb" ]; do
    echo -e "$((SECONDS - start))\t$((kb / 1024))" >> "$2"
    sleep 5
  done
}
train() {  # name rss_file [extra args]: starts the run in the background, its pid in $pid
  local name=$1 rss=$2
  shift 2
  "$binary" train "${args[@]}" --run-dir "$runs/$name" "$@" >> "$runs/$name.console" 2>&1 &
  pid=$!
  sample_rss "$pid" "$rss" > /dev/null 2>&1 &
}
# RUNS=DIR reuses a directory where the straight run already finished.
if [ ! -d "$runs/straight/checkpoints/checkpoint_00000200" ]; then
  train straight "$out/rss_straight.tsv"
  wait "$pid" || { echo "the straight run failed: $runs/straight.console" >&2; exit 1; }
fi
train resumed "$out/rss_resumed_killed.tsv"
# Kill it once a metrics row past update 150 is written (after the checkpoint at 100).
until awk -F, '$1 == "train" && $2 > 150 {found = 1} END {exit !found}' "$runs/resumed/metrics.csv" 2>/dev/null; do
  kill -0 "$pid" 2>/dev/null || { echo "the run to be killed ended first" >&2; exit 1; }
  sleep 2
done
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
train resumed "$out/rss_resumed.tsv" --resume auto
wait "$pid" || { echo "the resumed run failed: $runs/resumed.console" >&2; exit 1; }
sleep 6
for name in straight resumed; do
  mkdir -p "$out/$name"
  cp "$runs/$name"/{metrics.csv,train.log} "$runs/$name.console" "$out/$name/"
  du -sb "$runs/$name/checkpoints" | cut -f1 > "$out/$name/checkpoint_bytes.txt"
done
/usr/bin/python3 - "$out" <<'PY'
import csv, sys
out = sys.argv[1]
def rows(name):  # every column but the wall clock's
    with open(f"{out}/{name}/metrics.csv") as f:
        return [{k: v for k, v in r.items() if k not in ("tokens_per_second", "elapsed_seconds")} for r in csv.DictReader(f)]
a, b = rows("straight"), rows("resumed")
print(f"straight {len(a)} rows, resumed {len(b)} rows, identical: {a == b}")
PY
rm -rf "$runs"

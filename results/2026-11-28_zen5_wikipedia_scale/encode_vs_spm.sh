#!/usr/bin/env bash
# Encoding throughput: `linformer prepare` (a given tokenizer model, so only reading, encoding and
# writing shards) against SentencePiece's own `spm_encode` on the same text and model, with one
# core and with all cores, alternating, ROUNDS rounds. spm_encode is single-threaded: "all cores"
# runs one process per core on equal line-aligned parts of the file (split -n l/N).
#
# Usage: encode_vs_spm.sh TEXT_FILE SPM_MODEL OUT_JSONL [CORES]   (env: ROUNDS, default 3)
set -euo pipefail
text=$1 model=$2 out=$3 cores=${4:-$(nproc)}
root=$(cd "$(dirname "$0")/../.." && pwd)
binary=${LINFORMER_BIN:-$root/build/linformer}
rounds=${ROUNDS:-3}
work=$(mktemp -d "$(dirname "$text")/encode_vs_spm.XXXXXX")
trap 'rm -rf "$work"' EXIT
split -n "l/$cores" -d "$text" "$work/part."
bytes=$(stat -c %s "$text")
: > "$out"
record() {  # tool threads seconds [encode_seconds]
  printf '{"tool": "%s", "threads": %s, "round": %s, "bytes": %s, "seconds": %s, "encode_seconds": %s}\n' \
    "$1" "$2" "$round" "$bytes" "$3" "${4:-null}" | tee -a "$out"
}
linformer() {  # threads
  rm -rf "$work/prepared"
  local start end
  start=$(date +%s.%N)
  OMP_NUM_THREADS=$1 "$binary" --log-level warn prepare --recipe "$root/recipes/wikipedia/base.toml" --force \
    --set "data.corpus=[\"$text\"]" --set data.format=text --set "data.tokenizer_model=$model" \
    --set "data.prepared_dir=$work/prepared" --set "threads=$1" > "$work/linformer.log" 2>&1
  end=$(date +%s.%N)
  record linformer "$1" "$(echo "$end - $start" | bc)" \
    "$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["summary"]["phase_seconds"]["encode"])' \
      "$work/prepared/meta.json")"
}
spm() {  # processes
  local start end
  start=$(date +%s.%N)
  if [ "$1" = 1 ]; then
    spm_encode --model="$model" --output_format=id < "$text" > /dev/null
  else
    for part in "$work"/part.*; do spm_encode --model="$model" --output_format=id < "$part" > /dev/null & done
    wait
  fi
  end=$(date +%s.%N)
  record spm_encode "$1" "$(echo "$end - $start" | bc)"
}
for round in $(seq 1 "$rounds"); do
  spm 1; linformer 1; spm "$cores"; linformer "$cores"
done

#!/usr/bin/env bash
# `linformer prepare` at several corpus sizes: time per phase, MB/s, peak RSS, output size.
#
# For each SIZE (bytes, or 10M, 1G: powers of 10) a WikiExtractor-style corpus is generated once by
# scripts/make_corpus.py (seed 1) and cached in the corpus directory; prepare runs on it with the
# recipe's defaults under /usr/bin/time -v, --force, THREADS OpenMP threads. Writes
# OUT_DIR/bench_prepare.jsonl (one object per size) and OUT_DIR/bench_prepare.md (the table).
#
# Usage: scripts/bench_prepare.sh [-r RECIPE] [-c CORPUS_DIR] [-o OUT_DIR] [-t THREADS] [-s SET]... [-k] SIZE...
#   defaults: recipes/brown/base.toml, /tmp/linformer_bench_corpus, results/bench_prepare, 1 thread;
#   -s KEY=VALUE is passed to prepare as --set (e.g. -s data.vocab_size=32000); -k keeps each
#   prepared directory as CORPUS_DIR/prepared_SIZE (else it is removed). Prepared output is written
#   beside the corpora, never into OUT_DIR (a results folder holds no shards).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
recipe=$root/recipes/brown/base.toml
corpus_dir=/tmp/linformer_bench_corpus
out_dir=$root/results/bench_prepare
threads=1
binary=${LINFORMER_BIN:-$root/build/linformer}
sets=()
keep=false
while getopts "r:c:o:t:s:k" opt; do
  case $opt in
    r) recipe=$OPTARG ;;
    c) corpus_dir=$OPTARG ;;
    o) out_dir=$OPTARG ;;
    t) threads=$OPTARG ;;
    s) sets+=(--set "$OPTARG") ;;
    k) keep=true ;;
    *) sed -n '2,14p' "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { sed -n '2,14p' "$0" >&2; exit 2; }
[ -x "$binary" ] || { echo "bench_prepare.sh: no binary at $binary (build first)" >&2; exit 1; }
mkdir -p "$corpus_dir" "$out_dir"
jsonl=$out_dir/bench_prepare.jsonl
: > "$jsonl"
for size in "$@"; do
  corpus=$corpus_dir/wiki_$size.xml
  if [ ! -f "$corpus" ]; then
    /usr/bin/python3 "$root/scripts/make_corpus.py" "$corpus" "$size" --format wikiextractor --seed 1
  fi
  prepared=$(mktemp -d "$corpus_dir/prepared.XXXXXX")
  timing=$out_dir/time_$size.txt
  log=$out_dir/prepare_$size.log
  OMP_NUM_THREADS=$threads /usr/bin/time -v -o "$timing" "$binary" prepare --recipe "$recipe" --force \
    --set "data.corpus=[\"$corpus\"]" --set "data.prepared_dir=$prepared/out" --set "threads=$threads" \
    ${sets[@]+"${sets[@]}"} > "$log" 2>&1 || { echo "prepare failed on $corpus: see $log" >&2; exit 1; }
  /usr/bin/python3 - "$size" "$prepared/out/meta.json" "$timing" "$threads" >> "$jsonl" <<'EOF'
import json, re, sys
size, meta_path, timing_path, threads = sys.argv[1:]
meta = json.load(open(meta_path))
s = meta["summary"]
timing = open(timing_path).read()
field = lambda name: re.search(re.escape(name) + r": ([\d.:]+)", timing).group(1)
print(json.dumps({
    "size": size, "file_bytes": s["file_bytes"], "text_bytes": s["text_bytes"], "documents": s["documents"],
    "tokens": s["tokens"], "vocab_size": meta["tokenizer"]["vocab_size"], "threads": int(threads),
    "sample_bytes": meta["tokenizer"].get("sample_bytes"),
    "phase_seconds": s["phase_seconds"], "seconds": s["seconds"], "text_mb_per_second": s["text_mb_per_second"],
    "encode_mb_per_second": s["text_bytes"] / 1e6 / s["encode_seconds"] if s["encode_seconds"] else 0,
    "cpu_seconds": float(field("User time (seconds)")) + float(field("System time (seconds)")),
    "peak_rss_bytes": int(field("Maximum resident set size (kbytes)")) * 1024,
    "peak_rss_bytes_self": s["peak_rss_bytes"], "output_bytes": s["output_bytes"]}))
EOF
  if $keep; then
    rm -rf "$corpus_dir/prepared_$size" && mv "$prepared/out" "$corpus_dir/prepared_$size"
  fi
  rm -rf "$prepared"  # what is left: the output (unless kept) and prepare's lock file
  tail -1 "$jsonl"
done
/usr/bin/python3 - "$jsonl" > "$out_dir/bench_prepare.md" <<'EOF'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
print("| corpus | text MB | documents | tokens | read+sample s | tokenizer s | encode+split s | write s | total s "
      "| MB/s end to end | encode MB/s | CPU s | peak RSS MB | output MB |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for r in rows:
    p = r["phase_seconds"]
    print(f"| {r['size']} | {r['text_bytes'] / 1e6:.1f} | {r['documents']} | {r['tokens']} | {p['read']:.1f} "
          f"| {p['tokenizer']:.1f} | {p['encode']:.1f} | {p['write']:.1f} | {r['seconds']:.1f} "
          f"| {r['text_mb_per_second']:.2f} | {r['encode_mb_per_second']:.2f} | {r['cpu_seconds']:.1f} "
          f"| {r['peak_rss_bytes'] / 1e6:.0f} | {r['output_bytes'] / 1e6:.1f} |")
EOF
cat "$out_dir/bench_prepare.md"

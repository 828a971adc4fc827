#!/usr/bin/env bash
# Fuzzes the parsers of outside input with libFuzzer, each target for SECONDS (default 60), in
# the sanitized clang build build-sanitize/ (ASan + UBSan, -DLINFORMER_FUZZ=ON).
#
#   scripts/fuzz.sh [SECONDS] [TARGET…]     e.g. scripts/fuzz.sh 600 shard safetensors
#   scripts/fuzz.sh --build                  only configure and build all of build-sanitize/
#                                            (scripts/test.sh runs the suite in it)
#
# Targets are tests/fuzz/fuzz_<target>.cpp (all of them by default). Each starts from its
# committed inputs, tests/fuzz/<target>/seeds and /regressions (with the dictionary
# tests/fuzz/<target>/<target>.dict when there is one), which it only reads; what it
# learns goes to a temporary corpus that is thrown away. A finding (crash, sanitizer report,
# escaping exception, broken invariant, timeout, out of memory, leak) is saved under
# build-sanitize/fuzz/findings/<target>/ with its log, and fails the script once every target
# has run. Reproduce one with: build-sanitize/fuzz/fuzz_<target> FILE
set -euo pipefail
cd "$(dirname "$0")/.."

build_only=false
if [ "${1:-}" = --build ]; then build_only=true; shift; fi
seconds=${1:-60}
shift || true
if [ $# -gt 0 ]; then
  targets=("$@")
else
  targets=()
  for f in tests/fuzz/fuzz_*.cpp; do t=${f#tests/fuzz/fuzz_}; targets+=("${t%.cpp}"); done
fi
build=build-sanitize
jobs=$(nproc)

# The sanitized libFuzzer build; incremental, so nothing is rebuilt right after scripts/test.sh.
# Without MPI: Open MPI's own allocations would end every run in LeakSanitizer reports (the
# data-parallel test runs in the GCC build).
cmake -S . -B $build -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++ \
  -DLINFORMER_SANITIZE=ON -DLINFORMER_FUZZ=ON -DLINFORMER_MPI=OFF > $build.configure.log 2>&1 || { cat $build.configure.log; exit 1; }
rm -f $build.configure.log
if $build_only; then cmake --build $build -j "$jobs"; exit 0; fi
cmake --build $build -j "$jobs" --target "${targets[@]/#/fuzz_}"

# Scratch files of the targets (a crashed one leaves its own behind) and the grown corpora.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/linformer_fuzz.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
findings=$build/fuzz/findings
mkdir -p $findings

fuzz_one() {
  local t=$1 out=$findings/$1
  rm -rf "$out" && mkdir -p "$out" "$scratch/$t/corpus" "$scratch/$t/tmp"
  local inputs=(tests/fuzz/$t/seeds) options=()
  [ -d tests/fuzz/$t/regressions ] && inputs+=(tests/fuzz/$t/regressions)
  # Keys and edge numbers a mutation would rarely spell (tests/fuzz/make_seeds.py writes them).
  [ -f tests/fuzz/$t/$t.dict ] && options+=(-dict=tests/fuzz/$t/$t.dict)
  # -max_len: 64 KiB is room for every seed and the structures around it; -timeout and
  # -rss_limit_mb: a parser that takes 10 s or 2 GB on 64 KiB of input is a finding.
  # OMP_NUM_THREADS=1: the targets parse, and two OpenMP pools spinning on 2 cores would halve the
  # speed of both targets running at the same time.
  if TMPDIR=$scratch/$t/tmp OMP_NUM_THREADS=1 $build/fuzz/fuzz_$t "$scratch/$t/corpus" "${inputs[@]}" \
      -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$out/" "${options[@]}" > "$out/log" 2>&1; then
    rm -f "$out"/*-*  # nothing found: no artifacts to keep
  else
    echo "FAIL" > "$out/status"
  fi
}

# One target per core at a time: each gets its full SECONDS on a core of its own.
pids=()
for t in "${targets[@]}"; do
  [ -f tests/fuzz/fuzz_$t.cpp ] || { echo "fuzz: no target '$t' (tests/fuzz/fuzz_$t.cpp)"; exit 2; }
  fuzz_one "$t" &
  pids+=($!)
  if [ ${#pids[@]} -ge "$jobs" ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
done
wait

# Per target: executions, speed, coverage (edges "cov", features "ft") and corpus size reached.
failed=()
printf '%-14s %10s %9s %7s %7s %7s  %s\n' target execs exec/s cov ft corpus result
for t in "${targets[@]}"; do
  log=$findings/$t/log
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<< "$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<< "$last")
  corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<< "$last")
  result=ok
  if [ -f "$findings/$t/status" ]; then result="FINDING: see $log"; failed+=("$t"); fi
  printf '%-14s %10s %9s %7s %7s %7s  %s\n' "$t" "${execs:--}" "${speed:--}" "${cov:--}" "${ft:--}" "${corp:--}" "$result"
done

for t in "${failed[@]}"; do
  echo
  echo "==== fuzz_$t: finding ($findings/$t) ===="
  grep -E 'ERROR|runtime error|SUMMARY|fuzz: |terminate|Test unit written' "$findings/$t/log" | head -20 || true
  for a in "$findings/$t"/*-*; do
    [ -f "$a" ] && echo "reproduce: $build/fuzz/fuzz_$t $a   (then keep it in tests/fuzz/$t/regressions/)"
  done
done
[ ${#failed[@]} -eq 0 ] || { echo "fuzz: findings in ${failed[*]}"; exit 1; }

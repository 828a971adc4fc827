#!/usr/bin/env bash
# Lints every .cpp of src/ with clang-tidy 14 (the checks: .clang-tidy) against the compile
# commands of a configured build (default build/, as scripts/build.sh leaves it), on every core.
# Any finding fails the script, naming file, line and check. One file per clang-tidy: given
# several, clang-tidy 14 can crash in bugprone-argument-comment.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
[ -f "$build/compile_commands.json" ] || { echo "lint: no $build/compile_commands.json: run scripts/build.sh first" >&2; exit 1; }
mapfile -t files < <(git ls-files 'src/*.cpp')
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! printf '%s\n' "${files[@]}" | xargs -P "$(nproc)" -n 1 clang-tidy -p "$build" --quiet >"$log" 2>&1; then
  grep -E "(error|warning):" "$log" | sort -u >&2 || cat "$log" >&2
  echo "lint: clang-tidy found the problems above (.clang-tidy)" >&2
  exit 1
fi
echo "lint: ${#files[@]} files of src/ pass clang-tidy (.clang-tidy)"

#!/usr/bin/env bash
# Formats the C++ of src/, include/ and tests/ with clang-format 14 (the style: .clang-format;
# results/ keeps its probes as they were measured). With --check, changes nothing and fails
# naming each file whose format differs (what scripts/test.sh runs).
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files 'src/*.cpp' 'src/*.h' 'include/*.h' 'tests/*.cpp' 'tests/*.h')
if [ "${1:-}" = "--check" ]; then
  clang-format --dry-run --Werror "${files[@]}" || {
    echo "format: the files above differ from .clang-format's style; run scripts/format.sh" >&2
    exit 1
  }
  echo "format: ${#files[@]} files as .clang-format has them"
else
  clang-format -i "${files[@]}"
fi

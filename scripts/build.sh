#!/usr/bin/env bash
# Configures and builds build/linformer (Release, -march=native) and the tests.
# Extra arguments go to CMake, e.g. scripts/build.sh -DLINFORMER_PORTABLE=ON
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@" > build.configure.log 2>&1 || { cat build.configure.log; exit 1; }
rm -f build.configure.log
cmake --build build -j "$(nproc)"

#!/usr/bin/env bash
# Builds everything with warnings as errors and runs the whole test suite under CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh -DLINFORMER_WERROR=ON
ctest --test-dir build --output-on-failure -j "$(nproc)"

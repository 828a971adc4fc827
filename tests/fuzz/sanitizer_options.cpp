// Default options of the sanitizers, compiled into every executable of a -DLINFORMER_SANITIZE=ON
// build (the linformer binary, the tests, the fuzz targets), so that `ctest --test-dir
// build-sanitize` and a sanitized `linformer` behave the same whoever runs them. ASAN_OPTIONS,
// UBSAN_OPTIONS and LSAN_OPTIONS in the environment still override them.

extern "C" {

// abort_on_error: a report kills the process with SIGABRT, so no test that expects the exit code
// 1 of a user error can mistake a sanitizer's exit for it.
// detect_stack_use_after_return, check_initialization_order, strict_init_order: the checks that
// are off by default and cost little here.
const char* __asan_default_options() {
  return "abort_on_error=1:detect_leaks=1:detect_stack_use_after_return=1:check_initialization_order=1:"
         "strict_init_order=1";
}

const char* __ubsan_default_options() { return "abort_on_error=1:print_stacktrace=1"; }

// Each suppression would be a known finding that is not ours to fix here (tests/fuzz/README.md);
// there are none. LINFORMER_FUZZ_KNOWN=1 (the disabled fuzz.<name>.known tests) turns them off.
const char* __lsan_default_suppressions() { return ""; }

}  // extern "C"

# Writes the version header with the current git commit ("-dirty" when the tree has uncommitted
# changes). Run at every build (target linformer_version), so `linformer --version` and the
# records that quote it name the commit a binary was built from; configure_file rewrites the
# header only when its text changes, so an unchanged commit recompiles nothing.
# Inputs: SOURCE_DIR, INPUT, OUTPUT, PROJECT_VERSION, CMAKE_BUILD_TYPE, CMAKE_CXX_COMPILER_ID,
# CMAKE_CXX_COMPILER_VERSION.
execute_process(COMMAND git rev-parse --short HEAD WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE LINFORMER_GIT_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
                RESULT_VARIABLE not_git)
if(not_git OR NOT LINFORMER_GIT_COMMIT)
  set(LINFORMER_GIT_COMMIT "unknown")
else()
  execute_process(COMMAND git diff --quiet HEAD -- WORKING_DIRECTORY ${SOURCE_DIR} RESULT_VARIABLE dirty ERROR_QUIET)
  if(dirty)
    set(LINFORMER_GIT_COMMIT "${LINFORMER_GIT_COMMIT}-dirty")
  endif()
endif()
configure_file(${INPUT} ${OUTPUT} @ONLY)

#pragma once
// Logging through spdlog's default logger: a coloured console sink on stderr,
// plus a file sink in the run directory once one exists.

#include <spdlog/spdlog.h>

#include <string>

namespace linformer {

// Parses "trace|debug|info|warn|error|critical|off"; throws linformer::Error otherwise.
spdlog::level::level_enum parse_log_level(const std::string& name);

// Installs the console logger at `level` (the console's only: run logs keep info). Safe to call
// more than once.
void init_logging(spdlog::level::level_enum level);

// Adds (once per path) a file sink appending to `path`, at info or the console's level if finer,
// whatever the console shows (--log-level warn or off still leaves a complete train.log).
void log_to_file(const std::string& path);

// The error that ends the program: logged at `level` (run logs keep it) and printed to the
// console whatever its level, so `--log-level off` never hides why the program failed.
void log_ending_error(const std::string& message, spdlog::level::level_enum level = spdlog::level::err);

}  // namespace linformer

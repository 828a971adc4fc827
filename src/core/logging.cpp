#include "linformer/core/logging.h"

#include "linformer/core/check.h"
#include "linformer/core/world.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include <algorithm>
#include <cstdio>
#include <set>

namespace linformer {

spdlog::level::level_enum parse_log_level(const std::string& name) {
  const auto level = spdlog::level::from_str(name);
  // from_str maps anything unknown to "off"; only accept the real spelling of off.
  LF_CHECK(level != spdlog::level::off || name == "off",
           "unknown log level '{}' (expected trace, debug, info, warn, error, critical or off)", name);
  return level;
}

namespace {
// The logger passes everything that the console or a run log (info at least) shows; each sink
// filters to its own level, so --log-level quiets the console only.
spdlog::level::level_enum g_console_level = spdlog::level::info;

spdlog::level::level_enum file_level() { return std::min(g_console_level, spdlog::level::info); }
}  // namespace

void init_logging(spdlog::level::level_enum level) {
  auto logger = spdlog::get("linformer");
  if (!logger) {
    logger = spdlog::stderr_color_mt("linformer");
    // Data-parallel runs: every line names its rank, and only rank 0 says more than warnings.
    logger->set_pattern(World::distributed()
                            ? fmt::format("%^[%Y-%m-%d %H:%M:%S.%e] [rank {}] [%l]%$ %v", World::rank())
                            : std::string("%^[%Y-%m-%d %H:%M:%S.%e] [%l]%$ %v"));
    spdlog::set_default_logger(logger);
  }
  g_console_level = World::is_root() ? level : std::max(level, spdlog::level::warn);
  logger->sinks().front()->set_level(g_console_level);  // the console, created first
  logger->set_level(file_level());
  logger->flush_on(spdlog::level::warn);
}

void log_to_file(const std::string& path) {
  static std::set<std::string> attached;
  if (!attached.insert(path).second) return;
  auto logger = spdlog::default_logger();
  auto sink = with_context("opening log file '" + path + "'", [&] {
    try {
      return std::make_shared<spdlog::sinks::basic_file_sink_mt>(path, /*truncate=*/false);
    } catch (const spdlog::spdlog_ex& e) {
      throw Error(e.what());
    }
  });
  sink->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%l] %v");
  sink->set_level(file_level());
  logger->set_level(std::min(logger->level(), file_level()));
  logger->sinks().push_back(sink);
  logger->flush_on(spdlog::level::info);
}

void log_ending_error(const std::string& message, spdlog::level::level_enum level) {
  spdlog::log(level, "{}", message);
  if (level < g_console_level)
    std::fprintf(stderr, "%s: %s\n", level == spdlog::level::critical ? "critical" : "error", message.c_str());
}

}  // namespace linformer

#include "commands.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>

namespace linformer::cli {

CLI::Validator at_least(long long lo) {
  return CLI::Validator(
      [lo](std::string& text) -> std::string {
        errno = 0;
        char* end = nullptr;
        const long long value = std::strtoll(text.c_str(), &end, 10);
        if (text.empty() || *end != '\0' || errno == ERANGE) return fmt::format("'{}' is not a whole number", text);
        if (value < lo) return fmt::format("{} is less than {}", value, lo);
        return {};
      },
      fmt::format("INT ≥ {}", lo));
}

}  // namespace linformer::cli

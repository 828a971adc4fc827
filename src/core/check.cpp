#include "linformer/core/check.h"

#include <cstring>

namespace linformer::detail {

void throw_check_failure(const char* condition, const char* file, int line, const std::string& message) {
  // Keep only the path below the project root: ".../src/core/x.cpp" -> "src/core/x.cpp".
  const char* short_file = file;
  for (const char* root : {"/src/", "/include/", "/tests/"}) {
    if (const char* p = std::strstr(file, root)) {
      short_file = p + 1;
      break;
    }
  }
  throw Error(fmt::format("{} (check '{}' failed at {}:{})", message, condition, short_file, line));
}

}  // namespace linformer::detail

#pragma once
// Checked errors that stay on in release builds.
//
// Input validation never uses assert: LF_CHECK throws linformer::Error with the
// failed condition, the source location and a formatted message. Callers add
// context (which file, which key) as the error travels up with ErrorContext.

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace linformer {

// The one exception type of the project. what() is the full message, context first.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

namespace detail {
[[noreturn]] void throw_check_failure(const char* condition, const char* file, int line, const std::string& message);
}  // namespace detail

// Runs `body`; if it throws linformer::Error, rethrows with "context: " prepended.
// Example: with_context(fmt::format("reading {}", path), [&] { parse(path); });
template <class Body>
decltype(auto) with_context(const std::string& context, Body&& body) {
  try {
    return body();
  } catch (const Error& e) {
    throw Error(context + ": " + e.what());
  }
}

}  // namespace linformer

// LF_CHECK(cond, "format {}", args...): throws linformer::Error if cond is false.
#define LF_CHECK(cond, ...)                                                                            \
  do {                                                                                                 \
    if (!(cond)) [[unlikely]]                                                                          \
      ::linformer::detail::throw_check_failure(#cond, __FILE__, __LINE__, ::fmt::format(__VA_ARGS__)); \
  } while (0)

// LF_FAIL("format {}", args...): throws linformer::Error unconditionally (user-facing errors).
#define LF_FAIL(...) throw ::linformer::Error(::fmt::format(__VA_ARGS__))

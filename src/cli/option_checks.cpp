#include "commands.h"
#include "linformer/kernels/context.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstdlib>
#include <limits>

namespace linformer::cli {

CLI::Validator in_range(long long lo, long long hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        errno = 0;
        char* end = nullptr;
        const long long value = std::strtoll(text.c_str(), &end, 10);
        if (text.empty() || *end != '\0') return fmt::format("'{}' is not a whole number", text);
        if (errno == ERANGE || value > hi) return fmt::format("{} is more than {}", text, hi);
        if (value < lo) return fmt::format("{} is less than {}", value, lo);
        return {};
      },
      hi == std::numeric_limits<long long>::max() ? fmt::format("INT ≥ {}", lo)
                                                  : fmt::format("INT in [{}, {}]", lo, hi));
}

void add_help_footer(CLI::App& command, const std::string& details, const std::vector<std::string>& examples) {
  std::string text = details.empty() ? std::string() : "\n" + details + "\n";
  text += "\nExamples:\n";
  for (const auto& line : examples) text += "  " + line + "\n";
  command.footer(text);
}

CLI::Validator at_least(long long lo) { return in_range(lo, std::numeric_limits<long long>::max()); }

void add_precision_option(CLI::App& command, std::string& precision) {
  command
      .add_option("--precision", precision,
                  "Matmul precision: fp32, or bf16 operands with f32 accumulation (needs avx512_bf16)")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
}

void use_precision(const std::string& precision) {
  const MatmulPrecision selected = select_matmul_precision(precision == "bf16");
  if (precision == "bf16" && !selected.bf16) spdlog::warn("{}", selected.note);
}

}  // namespace linformer::cli

#include "linformer/train/metrics_log.h"

#include "linformer/core/check.h"
#include "linformer/core/fs.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <sstream>

namespace linformer {

namespace {
constexpr const char* kCsvHeader =
    "kind,update,tokens,epoch,lr,loss,perplexity,accuracy,grad_norm,tokens_per_second,elapsed_seconds\n";

// Rewrites `path` keeping the lines for which keep(line) holds (the first `header_lines` always).
template <class Keep>
void keep_rows(const std::string& path, int header_lines, Keep keep) {
  if (!std::filesystem::exists(path)) return;
  std::istringstream in(read_file(path));
  std::string line, out;
  int index = 0;
  while (std::getline(in, line)) {
    if (index++ < header_lines || (!line.empty() && keep(line))) out += line + "\n";
  }
  write_file_atomic(path, out);
}
}  // namespace

MetricsLog::MetricsLog(const std::string& run_dir, int64_t keep_until)
    : csv_path_((std::filesystem::path(run_dir) / "metrics.csv").string()),
      jsonl_path_((std::filesystem::path(run_dir) / "metrics.jsonl").string()) {
  keep_rows(csv_path_, 1, [&](const std::string& line) {
    const size_t a = line.find(','), b = line.find(',', a + 1);
    return a != std::string::npos && std::stoll(line.substr(a + 1, b - a - 1)) <= keep_until;
  });
  keep_rows(jsonl_path_, 0, [&](const std::string& line) {
    return nlohmann::json::parse(line).at("update").get<int64_t>() <= keep_until;
  });
  const bool new_csv = !std::filesystem::exists(csv_path_);
  csv_.open(csv_path_, std::ios::app);
  jsonl_.open(jsonl_path_, std::ios::app);
  if (!csv_ || !jsonl_) LF_FAIL("cannot open the metrics files in '{}'", run_dir);
  if (new_csv) csv_ << kCsvHeader << std::flush;
}

void MetricsLog::append(const MetricsRow& r) {
  csv_ << fmt::format("{},{},{},{},{:.6g},{:.6f},{:.4f},{:.6f},{:.6g},{:.1f},{:.2f}\n", r.kind, r.update, r.tokens,
                      r.epoch, r.lr, r.loss, r.perplexity, r.accuracy, r.grad_norm, r.tokens_per_second,
                      r.elapsed_seconds)
       << std::flush;
  nlohmann::json j = {{"kind", r.kind},       {"update", r.update},         {"tokens", r.tokens},
                      {"epoch", r.epoch},     {"lr", r.lr},                 {"loss", r.loss},
                      {"perplexity", r.perplexity}, {"accuracy", r.accuracy}, {"grad_norm", r.grad_norm},
                      {"tokens_per_second", r.tokens_per_second}, {"elapsed_seconds", r.elapsed_seconds}};
  jsonl_ << j.dump() << "\n" << std::flush;
}

}  // namespace linformer

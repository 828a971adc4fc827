#include "linformer/train/metrics_log.h"

#include "linformer/core/check.h"
#include "linformer/core/fs.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <vector>

namespace linformer {

namespace {
// The wall-clock columns stay last (tests compare rows without them).
constexpr const char* kCsvHeader =
    "kind,update,tokens,epoch,lr,loss,perplexity,accuracy,grad_norm,unigram_perplexity,tokens_per_second,"
    "elapsed_seconds\n";

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> fields;
  size_t start = 0;
  for (size_t comma; (comma = line.find(',', start)) != std::string::npos; start = comma + 1)
    fields.push_back(line.substr(start, comma - start));
  fields.push_back(line.substr(start));
  return fields;
}

// An older metrics.csv's rows in today's columns, by name; absent columns stay empty.
void upgrade_csv_columns(const std::string& path) {
  if (!std::filesystem::exists(path)) return;
  std::istringstream in(read_file(path));
  std::string header;
  std::getline(in, header);
  if (header + "\n" == kCsvHeader) return;
  const auto old_columns = split_csv_line(header);
  auto new_columns = split_csv_line(kCsvHeader);
  new_columns.back().pop_back();  // the newline
  std::vector<int> source;  // old index of each new column, −1 when absent
  for (const auto& name : new_columns) {
    const auto it = std::find(old_columns.begin(), old_columns.end(), name);
    source.push_back(it == old_columns.end() ? -1 : static_cast<int>(it - old_columns.begin()));
  }
  if (source[0] != 0 || source[1] != 1)
    LF_FAIL("{}: not a metrics file of linformer train (header '{}')", path, header);
  std::string out = kCsvHeader;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    const auto fields = split_csv_line(line);
    for (size_t c = 0; c < source.size(); ++c) {
      if (c) out += ',';
      if (source[c] >= 0 && static_cast<size_t>(source[c]) < fields.size()) out += fields[static_cast<size_t>(source[c])];
    }
    out += '\n';
  }
  write_file_atomic(path, out);
}

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
  upgrade_csv_columns(csv_path_);
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
  const std::string unigram = r.unigram_perplexity > 0 ? fmt::format("{:.4f}", r.unigram_perplexity) : "";
  csv_ << fmt::format("{},{},{},{},{:.6g},{:.6f},{:.4f},{:.6f},{:.6g},{},{:.1f},{:.2f}\n", r.kind, r.update, r.tokens,
                      r.epoch, r.lr, r.loss, r.perplexity, r.accuracy, r.grad_norm, unigram, r.tokens_per_second,
                      r.elapsed_seconds)
       << std::flush;
  nlohmann::json j = {{"kind", r.kind},       {"update", r.update},         {"tokens", r.tokens},
                      {"epoch", r.epoch},     {"lr", r.lr},                 {"loss", r.loss},
                      {"perplexity", r.perplexity}, {"accuracy", r.accuracy}, {"grad_norm", r.grad_norm},
                      {"tokens_per_second", r.tokens_per_second}, {"elapsed_seconds", r.elapsed_seconds}};
  if (r.unigram_perplexity > 0) j["unigram_perplexity"] = r.unigram_perplexity;
  jsonl_ << j.dump() << "\n" << std::flush;
}

}  // namespace linformer

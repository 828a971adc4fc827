#include "linformer/train/metrics_log.h"

#include "linformer/core/check.h"
#include "linformer/core/fs.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <sstream>
#include <vector>

namespace linformer {

namespace {
// The wall-clock columns stay last (tests compare rows without them).
constexpr const char* kCsvHeader =
    "kind,update,tokens,epoch,lr,loss,perplexity,accuracy,grad_norm,unigram_perplexity,macro_f1,shuffled_perplexity,"
    "tokens_per_second,elapsed_seconds\n";

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
  // Empty: created by a run whose header write failed (a full disk); the header comes next.
  if (!std::filesystem::exists(path) || std::filesystem::file_size(path) == 0) return;
  std::istringstream in(read_file(path));
  std::string header;
  std::getline(in, header);
  if (header + "\n" == kCsvHeader) return;
  const auto old_columns = split_csv_line(header);
  auto new_columns = split_csv_line(kCsvHeader);
  new_columns.back().pop_back();  // the newline
  std::vector<int> source;        // old index of each new column, −1 when absent
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
      if (source[c] >= 0 && static_cast<size_t>(source[c]) < fields.size())
        out += fields[static_cast<size_t>(source[c])];
    }
    out += '\n';
  }
  write_file_atomic(path, out);
}

// What decides whether a row is kept.
struct RowKey {
  std::string kind;
  int64_t update = 0;
};

// The kind and update of a row, or nothing when the line is not a whole row.
std::optional<RowKey> csv_key(const std::string& line) {
  const auto fields = split_csv_line(line);
  const auto columns = split_csv_line(kCsvHeader);
  if (fields.size() != columns.size()) return std::nullopt;
  try {
    size_t used = 0;
    const int64_t update = std::stoll(fields[1], &used);
    return used == fields[1].size() ? std::optional<RowKey>(RowKey{fields[0], update}) : std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<RowKey> jsonl_key(const std::string& line) {
  try {
    const auto row = nlohmann::json::parse(line);
    return RowKey{row.at("kind").get<std::string>(), row.at("update").get<int64_t>()};
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

// Rewrites `path` keeping the rows with update ≤ keep_until, but those of kind `drop_kind` (and
// the first `header_lines`). A torn last line (a process killed while appending it) is dropped
// with a warning; any other line that is not a row is an error naming the file and line.
template <class KeyOf>
void keep_rows(const std::string& path, int header_lines, int64_t keep_until, const std::string& drop_kind,
               KeyOf key_of) {
  if (!std::filesystem::exists(path)) return;
  const std::string text = read_file(path);
  std::istringstream in(text);
  std::string line, out;
  int number = 0;
  bool changed = false;
  while (std::getline(in, line)) {
    ++number;
    if (number <= header_lines) {
      out += line + "\n";
      continue;
    }
    if (line.empty()) continue;
    const auto key = key_of(line);
    if (!key) {
      const bool last = in.peek() == std::char_traits<char>::eof();
      if (!last) LF_FAIL("{}:{}: not a metrics row: '{}' (remove the line to continue the run)", path, number, line);
      spdlog::warn("{}:{}: dropping a partial last row (the process that wrote it was stopped mid-write)", path,
                   number);
      changed = true;
      continue;
    }
    if (key->update <= keep_until && key->kind != drop_kind)
      out += line + "\n";
    else
      changed = true;
  }
  if (changed || out.size() != text.size()) write_file_atomic(path, out);
}
}  // namespace

MetricsLog::MetricsLog(const std::string& run_dir, int64_t keep_until, bool writes, const std::string& drop_kind)
    : csv_path_((std::filesystem::path(run_dir) / "metrics.csv").string()),
      jsonl_path_((std::filesystem::path(run_dir) / "metrics.jsonl").string()),
      writes_(writes) {
  if (!writes_) return;
  for (const std::string& path : {csv_path_, jsonl_path_}) {
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status))
      LF_FAIL("{} is {}, not a file: the run writes its metrics there (move it away)", path,
              std::filesystem::is_directory(status) ? "a directory" : "a special file");
  }
  upgrade_csv_columns(csv_path_);
  keep_rows(csv_path_, 1, keep_until, drop_kind, csv_key);
  keep_rows(jsonl_path_, 0, keep_until, drop_kind, jsonl_key);
  const bool new_csv = !std::filesystem::exists(csv_path_) || std::filesystem::file_size(csv_path_) == 0;
  // The header whole or not at all: a full disk must not leave a metrics.csv without one.
  if (new_csv) write_file_atomic(csv_path_, kCsvHeader);
  csv_ = AppendFile(csv_path_);
  jsonl_ = AppendFile(jsonl_path_);
}

void MetricsLog::append(const MetricsRow& r) {
  if (!writes_) return;
  const std::string unigram = r.unigram_perplexity > 0 ? fmt::format("{:.4f}", r.unigram_perplexity) : "";
  const std::string macro_f1 = r.macro_f1 >= 0 ? fmt::format("{:.6f}", r.macro_f1) : "";
  const std::string shuffled = r.shuffled_perplexity > 0 ? fmt::format("{:.4f}", r.shuffled_perplexity) : "";
  const std::string csv_row =
      fmt::format("{},{},{},{},{:.6g},{:.6f},{:.4f},{:.6f},{:.6g},{},{},{},{:.1f},{:.2f}\n", r.kind, r.update, r.tokens,
                  r.epoch, r.lr, r.loss, r.perplexity, r.accuracy, r.grad_norm, unigram, macro_f1, shuffled,
                  r.tokens_per_second, r.elapsed_seconds);
  nlohmann::json j = {{"kind", r.kind},
                      {"update", r.update},
                      {"tokens", r.tokens},
                      {"epoch", r.epoch},
                      {"lr", r.lr},
                      {"loss", r.loss},
                      {"perplexity", r.perplexity},
                      {"accuracy", r.accuracy},
                      {"grad_norm", r.grad_norm},
                      {"tokens_per_second", r.tokens_per_second},
                      {"elapsed_seconds", r.elapsed_seconds}};
  if (r.unigram_perplexity > 0) j["unigram_perplexity"] = r.unigram_perplexity;
  if (r.macro_f1 >= 0) j["macro_f1"] = r.macro_f1;
  if (r.shuffled_perplexity > 0) j["shuffled_perplexity"] = r.shuffled_perplexity;
  // Both files get the row or neither does.
  const uint64_t csv_before = csv_.size();
  csv_.append(csv_row);
  try {
    jsonl_.append(j.dump() + "\n");
  } catch (const Error&) {
    csv_.truncate(csv_before);
    throw;
  }
}

}  // namespace linformer

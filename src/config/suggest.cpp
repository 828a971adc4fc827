#include "linformer/config/suggest.h"

#include <algorithm>
#include <climits>
#include <map>

namespace linformer::config {

int edit_distance(const std::string& a, const std::string& b) {
  const size_t n = a.size(), m = b.size();
  // d[i][j]: distance between a[0, i) and b[0, j).
  std::vector<std::vector<int>> d(n + 1, std::vector<int>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = static_cast<int>(i);
  for (size_t j = 0; j <= m; ++j) d[0][j] = static_cast<int>(j);
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      const int cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[n][m];
}

namespace {
std::string last_component(const std::string& key) {
  const size_t dot = key.rfind('.');
  return dot == std::string::npos ? key : key.substr(dot + 1);
}
}  // namespace

const std::map<std::string, MovedKey>& moved_keys() {
  // Pretraining never read finetune.epochs, and train.max_epochs would stop a pretraining run.
  static const std::map<std::string, MovedKey> moved = {
      {"finetune.epochs",
       {"train.max_epochs", "in a fine-tuning recipe; a pretraining recipe never read it: delete it there"}}};
  return moved;
}

std::optional<std::string> closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  // Keys that moved: an older recipe's key names its new place.
  if (const auto it = moved_keys().find(word); it != moved_keys().end()) return it->second.now;
  // A key whose name exists in another section is misplaced, more likely than mistyped ("data.heads"
  // is model.heads, not data.seed three edits away).
  const std::string leaf = last_component(word);
  for (const auto& c : candidates)
    if (c != word && last_component(c) == leaf) return c;

  int best = INT_MAX;
  const std::string* best_candidate = nullptr;
  for (const auto& c : candidates) {
    const int d = edit_distance(word, c);
    if (d < best) {
      best = d;
      best_candidate = &c;
    }
  }
  const int tolerated = std::max(2, static_cast<int>(word.size()) / 3);
  if (best_candidate && best <= tolerated) return *best_candidate;
  return std::nullopt;
}

}  // namespace linformer::config

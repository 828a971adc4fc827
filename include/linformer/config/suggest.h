#pragma once
// "Did you mean …?" for misspelt recipe keys and command-line values.

#include <optional>
#include <string>
#include <vector>

namespace linformer::config {

// Optimal-string-alignment distance: insertions, deletions, substitutions and
// swaps of adjacent characters each cost 1.
int edit_distance(const std::string& a, const std::string& b);

// The candidate closest to `word` if it is close enough to be a likely typo
// (distance ≤ max(2, |word| / 3)); otherwise, for dotted keys, a candidate with
// the same last component ("data.k" → "model.k"); otherwise nothing.
std::optional<std::string> closest_match(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace linformer::config

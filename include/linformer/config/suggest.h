#pragma once
// "Did you mean …?" for misspelt recipe keys and command-line values.

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace linformer::config {

// Optimal-string-alignment distance: insertions, deletions, substitutions and
// swaps of adjacent characters each cost 1.
int edit_distance(const std::string& a, const std::string& b);

// A candidate with the same last component, the key in another section
// ("data.k" → "model.k", "model.seed" → "seed"); otherwise the candidate closest to
// `word` if it is close enough to be a likely typo (distance ≤ max(2, |word| / 3));
// otherwise nothing.
std::optional<std::string> closest_match(const std::string& word, const std::vector<std::string>& candidates);

// A key an older version had and this one moved: its new place, and what to do with the old key
// where the new one would change the run (a resolved pretraining recipe carries every section).
struct MovedKey {
  std::string now;
  std::string advice;
};

// Keys an older version had and this one moved: a recipe someone writes is told where the key
// went and what to do (the unknown-key error, closest_match); a recipe.toml linformer wrote before
// the move is read without it (load_written_recipe).
const std::map<std::string, MovedKey>& moved_keys();

}  // namespace linformer::config

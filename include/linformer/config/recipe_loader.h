#pragma once
// Reading, validating and writing recipes.
//
// A recipe is a TOML file. It may inherit another with a top-level
//   base = "../base.toml"   (relative to the file that names it)
// whose values it overrides, key by key. Command-line overrides ("model.k=256",
// from --set) are applied last. Unknown keys, wrong types, out-of-range values
// and inconsistent combinations are all reported together, each with the file,
// line and key, in one linformer::Error.

#include "linformer/config/recipe.h"

#include <string>
#include <vector>

namespace linformer::config {

// Loads `path` with its base chain and the overrides; throws linformer::Error.
Recipe load_recipe(const std::string& path, const std::vector<std::string>& overrides = {});

// A recipe.toml linformer wrote into a checkpoint: the settings of the version that wrote it, so
// a key that version had and this one moved (config::moved_keys()) is skipped with a warning, not
// refused; anything else is checked as load_recipe() checks it.
Recipe load_written_recipe(const std::string& path);

// Cross-option checks (heads divide d_model, k ≤ n, …); one message per problem.
std::vector<std::string> validate_recipe(const Recipe& recipe);
// The model section's cross-option checks, for n = data.seq_len: the one place that says which
// model configurations are buildable (recipes and weights files are both checked with it).
std::vector<std::string> model_errors(const ModelConfig& model, int seq_len);

// The fully resolved recipe as TOML; load_recipe() of it gives the same recipe.
std::string dump_recipe(const Recipe& recipe);

// One declared option, for the reference and for suggestions.
struct OptionInfo {
  std::string key;            // "model.k"; sections have their bare name, e.g. "model"
  std::string type;           // "integer", "one of: full, linformer", …
  std::string default_value;  // as TOML
  std::string help;
  std::string rule;  // "≥ 1", or empty
  bool is_section = false;
};
std::vector<OptionInfo> recipe_options();

// The recipe reference in Markdown (the README's table comes from this).
std::string recipe_reference_markdown();

}  // namespace linformer::config

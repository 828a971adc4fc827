#pragma once
// The model's shape and behaviour, resolved from a recipe: the recipe's [model] section, the
// two sizes the data decides (n, V) and one k per layer. Everything the layers need and
// nothing about data or optimisation. Stored in every weights file (safetensors __metadata__
// "model") so that a file describes itself; written and read through ModelConfig's visit()
// list, so no field is listed here again.

#include "linformer/config/recipe.h"

#include <nlohmann/json_fwd.hpp>

namespace linformer {

struct ModelSpec : config::ModelConfig {
  int seq_len = 0;     // n: maximum positions (data.seq_len)
  int vocab_size = 0;  // V (data.vocab_size)
  // k_per_layer (from ModelConfig) is resolved: K_l for every layer of a Linformer, empty for full attention.

  ModelSpec();  // ModelConfig's declared defaults, no sizes

  int head_dim() const { return d_model / heads; }
  bool is_linformer() const { return attention == config::AttentionKind::linformer; }
  // s = n / K_l: the window of the pooling and conv projections.
  int window(int layer) const { return seq_len / k_per_layer.at(layer); }

  static ModelSpec from_recipe(const config::Recipe& recipe);
  // Throws linformer::Error listing every problem: the options' rules and config::model_errors,
  // as for a recipe (a spec may come from a weights file), and the sizes.
  void validate() const;
};

void to_json(nlohmann::json& j, const ModelSpec& spec);
void from_json(const nlohmann::json& j, ModelSpec& spec);

}  // namespace linformer

#pragma once
// The model's shape and behaviour, resolved from a recipe: everything the
// layers need and nothing about data or optimisation. Stored in every weights
// file (safetensors __metadata__ "model") so that a file describes itself.

#include "linformer/config/recipe.h"

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

namespace linformer {

struct ModelSpec {
  int layers = 0;
  int d_model = 0;  // C
  int heads = 0;    // H
  int ffn_dim = 0;  // F
  int seq_len = 0;  // n: maximum positions
  int vocab_size = 0;
  config::NormPlacement norm = config::NormPlacement::post;
  float layer_norm_eps = 1e-5f;
  float init_std = 0.02f;
  float dropout = 0, attention_dropout = 0, activation_dropout = 0;
  config::AttentionKind attention = config::AttentionKind::linformer;
  std::vector<int> k_per_layer;  // K_l, resolved (one per layer) for linformer
  config::Sharing sharing = config::Sharing::headwise;
  config::ProjectionKind projection = config::ProjectionKind::linear;
  bool freeze_projection = false;
  config::ProjectionInit projection_init = config::ProjectionInit::normal;

  int head_dim() const { return d_model / heads; }
  bool is_linformer() const { return attention == config::AttentionKind::linformer; }
  // s = n / K_l: the window of the pooling and conv projections.
  int window(int layer) const { return seq_len / k_per_layer.at(layer); }

  static ModelSpec from_recipe(const config::Recipe& recipe);
  // Checks the combination is buildable (the recipe validator says the same for recipes;
  // this also guards specs read from weights files).
  void validate() const;
};

void to_json(nlohmann::json& j, const ModelSpec& spec);
void from_json(const nlohmann::json& j, ModelSpec& spec);

}  // namespace linformer

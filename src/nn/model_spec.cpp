#include "linformer/nn/model_spec.h"

#include "linformer/config/recipe_loader.h"
#include "linformer/config/section_json.h"
#include "linformer/core/check.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace linformer {

ModelSpec::ModelSpec() {
  config::DefaultsVisitor defaults;
  visit(defaults);
}

namespace {
// One spelling of k per model: K_l in k_per_layer (Linformer), k itself then repeats layer 0's;
// full attention has no k (its declared default), so specs compare equal whatever a recipe says.
void resolve_k(ModelSpec& s) {
  if (!s.is_linformer()) {
    s.k_per_layer.clear();
    s.k = ModelSpec().k;
    return;
  }
  if (s.k_per_layer.empty()) s.k_per_layer.assign(static_cast<size_t>(std::max(s.layers, 0)), s.k);
  if (!s.k_per_layer.empty()) s.k = s.k_per_layer[0];
}
}  // namespace

ModelSpec ModelSpec::from_recipe(const config::Recipe& recipe) {
  ModelSpec s;
  static_cast<config::ModelConfig&>(s) = recipe.model;
  s.seq_len = recipe.data.seq_len;
  s.vocab_size = recipe.data.vocab_size;
  resolve_k(s);
  s.validate();
  return s;
}

void ModelSpec::validate() const {
  std::vector<std::string> errors =
      config::section_rule_errors(static_cast<const config::ModelConfig&>(*this), "model");
  if (seq_len < 2) errors.push_back(fmt::format("seq_len = {} must be at least 2", seq_len));
  if (vocab_size <= 5) errors.push_back(fmt::format("vocab_size = {} leaves no ordinary tokens", vocab_size));
  if (errors.empty())  // the cross-option checks divide by heads and index k_per_layer
    for (auto& e : config::model_errors(*this, seq_len)) errors.push_back(std::move(e));
  if (errors.empty() && is_linformer() && static_cast<int>(k_per_layer.size()) != layers)
    errors.push_back(fmt::format("{} values of k for {} layers", k_per_layer.size(), layers));
  if (errors.empty()) return;
  std::string message = "invalid model:";
  for (const auto& e : errors) message += "\n  " + e;
  throw Error(message);
}

void to_json(nlohmann::json& j, const ModelSpec& s) {
  j = config::section_to_json(static_cast<const config::ModelConfig&>(s));
  j["seq_len"] = s.seq_len;
  j["vocab_size"] = s.vocab_size;
}

void from_json(const nlohmann::json& j, ModelSpec& s) {
  LF_CHECK(j.is_object(), "model description: expected a JSON object, got {}", j.dump());
  s = ModelSpec();
  std::vector<std::string> errors = config::section_from_json(j, static_cast<config::ModelConfig&>(s), "model");
  for (const char* key : {"seq_len", "vocab_size", "layers", "d_model", "heads", "ffn_dim"})
    if (!j.contains(key)) errors.push_back(fmt::format("model.{} is missing", key));
  for (auto [key, size] : {std::pair{"seq_len", &s.seq_len}, std::pair{"vocab_size", &s.vocab_size}}) {
    if (!j.contains(key)) continue;
    if (config::json_holds<int>(j.at(key)))
      *size = j.at(key).get<int>();
    else
      errors.push_back(fmt::format("model.{} = {} is not an integer", key, j.at(key).dump()));
  }
  resolve_k(s);
  if (!errors.empty()) {
    std::string message = "model description:";
    for (const auto& e : errors) message += "\n  " + e;
    throw Error(message);
  }
  s.validate();
}

}  // namespace linformer

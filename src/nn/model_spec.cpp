#include "linformer/nn/model_spec.h"

#include "linformer/core/check.h"

#include <nlohmann/json.hpp>

namespace linformer {

using config::enum_name;
using config::parse_enum;

ModelSpec ModelSpec::from_recipe(const config::Recipe& recipe) {
  const auto& m = recipe.model;
  ModelSpec s;
  s.layers = m.layers;
  s.d_model = m.d_model;
  s.heads = m.heads;
  s.ffn_dim = m.ffn_dim;
  s.seq_len = recipe.data.seq_len;
  s.vocab_size = recipe.data.vocab_size;
  s.norm = m.norm;
  s.layer_norm_eps = static_cast<float>(m.layer_norm_eps);
  s.init_std = static_cast<float>(m.init_std);
  s.dropout = static_cast<float>(m.dropout);
  s.attention_dropout = static_cast<float>(m.attention_dropout);
  s.activation_dropout = static_cast<float>(m.activation_dropout);
  s.attention = m.attention;
  if (s.is_linformer()) s.k_per_layer = m.k_per_layer.empty() ? std::vector<int>(m.layers, m.k) : m.k_per_layer;
  s.sharing = m.sharing;
  s.projection = m.projection;
  s.freeze_projection = m.freeze_projection;
  s.projection_init = m.projection_init;
  s.validate();
  return s;
}

void ModelSpec::validate() const {
  LF_CHECK(layers > 0 && d_model > 0 && heads > 0 && ffn_dim > 0 && seq_len > 0 && vocab_size > 5,
           "model sizes must be positive (layers {}, d_model {}, heads {}, ffn_dim {}, seq_len {}, vocab {})", layers,
           d_model, heads, ffn_dim, seq_len, vocab_size);
  LF_CHECK(d_model % heads == 0, "heads = {} must divide d_model = {}", heads, d_model);
  if (!is_linformer()) return;
  LF_CHECK(static_cast<int>(k_per_layer.size()) == layers, "{} values of k for {} layers", k_per_layer.size(), layers);
  for (int k : k_per_layer) {
    LF_CHECK(k >= 1 && k <= seq_len, "k = {} must be in [1, seq_len = {}]", k, seq_len);
    LF_CHECK(projection == config::ProjectionKind::linear || seq_len % k == 0,
             "projection {} needs seq_len = {} to be a multiple of k = {}", enum_name(projection), seq_len, k);
  }
  if (sharing == config::Sharing::layerwise)
    for (int k : k_per_layer)
      LF_CHECK(k == k_per_layer[0], "layerwise sharing needs the same k in every layer");
}

namespace {
// A float as the double with the same shortest decimal text (0.1f -> 0.1, not 0.10000000149).
double tidy(float x) { return std::stod(fmt::format("{}", x)); }
}  // namespace

void to_json(nlohmann::json& j, const ModelSpec& s) {
  j = nlohmann::json{{"layers", s.layers},
                     {"d_model", s.d_model},
                     {"heads", s.heads},
                     {"ffn_dim", s.ffn_dim},
                     {"seq_len", s.seq_len},
                     {"vocab_size", s.vocab_size},
                     {"norm", enum_name(s.norm)},
                     {"layer_norm_eps", tidy(s.layer_norm_eps)},
                     {"init_std", tidy(s.init_std)},
                     {"dropout", tidy(s.dropout)},
                     {"attention_dropout", tidy(s.attention_dropout)},
                     {"activation_dropout", tidy(s.activation_dropout)},
                     {"attention", enum_name(s.attention)},
                     {"k_per_layer", s.k_per_layer},
                     {"sharing", enum_name(s.sharing)},
                     {"projection", enum_name(s.projection)},
                     {"freeze_projection", s.freeze_projection},
                     {"projection_init", enum_name(s.projection_init)}};
}

namespace {
template <class E>
E enum_field(const nlohmann::json& j, const char* key) {
  const std::string text = j.at(key).get<std::string>();
  const auto value = parse_enum<E>(text);
  LF_CHECK(value.has_value(), "model.{} = '{}' is not one of {}", key, text, config::enum_choices<E>());
  return *value;
}
}  // namespace

void from_json(const nlohmann::json& j, ModelSpec& s) {
  try {
    s.layers = j.at("layers").get<int>();
    s.d_model = j.at("d_model").get<int>();
    s.heads = j.at("heads").get<int>();
    s.ffn_dim = j.at("ffn_dim").get<int>();
    s.seq_len = j.at("seq_len").get<int>();
    s.vocab_size = j.at("vocab_size").get<int>();
    s.norm = enum_field<config::NormPlacement>(j, "norm");
    s.layer_norm_eps = j.at("layer_norm_eps").get<float>();
    s.init_std = j.value("init_std", 0.02f);
    s.dropout = j.value("dropout", 0.0f);
    s.attention_dropout = j.value("attention_dropout", 0.0f);
    s.activation_dropout = j.value("activation_dropout", 0.0f);
    s.attention = enum_field<config::AttentionKind>(j, "attention");
    s.k_per_layer = j.value("k_per_layer", std::vector<int>{});
    s.sharing = enum_field<config::Sharing>(j, "sharing");
    s.projection = enum_field<config::ProjectionKind>(j, "projection");
    s.freeze_projection = j.value("freeze_projection", false);
    s.projection_init = j.contains("projection_init") ? enum_field<config::ProjectionInit>(j, "projection_init")
                                                      : config::ProjectionInit::normal;
  } catch (const nlohmann::json::exception& e) {
    LF_FAIL("model description: {}", e.what());
  }
  s.validate();
}

}  // namespace linformer

#include "linformer/nn/parameters.h"

#include "linformer/core/rng.h"

#include <cmath>

namespace linformer {

using config::ProjectionInit;
using config::ProjectionKind;
using config::Sharing;

std::vector<ParamSpec> build_parameter_table(const ModelSpec& s) {
  s.validate();  // the table indexes k_per_layer and divides by heads
  const int64_t C = s.d_model, F = s.ffn_dim, V = s.vocab_size, n = s.seq_len, H = s.heads;
  std::vector<ParamSpec> t;
  auto add = [&](const std::string& name, Shape shape, Init init, bool decay, bool trainable = true) {
    t.push_back({name, shape, init, trainable, decay});
  };
  auto linear = [&](const std::string& name, int64_t out, int64_t in) {
    add(name + ".weight", Shape{out, in}, Init::normal, true);
    add(name + ".bias", Shape{out}, Init::zeros, false);
  };
  auto layer_norm = [&](const std::string& name) {
    add(name + ".weight", Shape{C}, Init::ones, false);
    add(name + ".bias", Shape{C}, Init::zeros, false);
  };
  // One Linformer compression: E (K, n) for linear, the filter (s) for conv; per head when unshared.
  auto projection = [&](const std::string& name, int layer) {
    const bool per_head = s.sharing == Sharing::none;
    const bool trainable = !s.freeze_projection;
    if (s.projection == ProjectionKind::linear) {
      const int64_t K = s.k_per_layer[layer];
      add(name, per_head ? Shape{H, K, n} : Shape{K, n}, Init::projection, true, trainable);
    } else if (s.projection == ProjectionKind::conv) {
      const int64_t w = s.window(layer);
      add(name, per_head ? Shape{H, w} : Shape{w}, Init::conv_window, true, trainable);
    }
  };

  add("embed.tokens", Shape{V, C}, Init::embedding, true);
  add("embed.positions", Shape{n, C}, Init::normal, true);
  layer_norm("embed.ln");
  if (s.is_linformer() && s.sharing == Sharing::layerwise) projection("shared_proj", 0);
  for (int l = 0; l < s.layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    linear(p + "attn.in_proj", 3 * C, C);
    linear(p + "attn.out_proj", C, C);
    if (s.is_linformer() && s.sharing != Sharing::layerwise) {
      projection(p + "attn.proj_e", l);
      if (s.sharing == Sharing::none || s.sharing == Sharing::headwise) projection(p + "attn.proj_f", l);
    }
    layer_norm(p + "ln_attn");
    linear(p + "ffn.fc1", F, C);
    linear(p + "ffn.fc2", C, F);
    layer_norm(p + "ln_ffn");
  }
  if (s.norm == config::NormPlacement::pre) layer_norm("final_ln");
  linear("mlm_head.dense", C, C);
  layer_norm("mlm_head.ln");
  add("mlm_head.bias", Shape{V}, Init::zeros, false);
  return t;
}

ArenaLayout Parameters::layout_for(const std::vector<ParamSpec>& table) {
  ArenaLayout layout(sizeof(float));
  for (const auto& p : table) layout.add(p.name, p.shape);
  return layout;
}

Parameters::Parameters(const ModelSpec& spec)
    : spec_(spec), table_(build_parameter_table(spec)), values_(layout_for(table_)), grads_(layout_for(table_)) {}

int64_t Parameters::count() const {
  int64_t n = 0;
  for (const auto& p : table_) n += p.shape.numel();
  return n;
}

void Parameters::initialize(uint64_t seed) {
  for (const auto& p : table_) {
    const TensorView<float> v = value(p.name);
    float* x = v.data();
    const int64_t count = v.numel();
    Rng rng(seed, stream_id({hash_string(p.name)}));
    switch (p.init) {
      case Init::zeros:
        for (int64_t i = 0; i < count; ++i) x[i] = 0.0f;
        break;
      case Init::ones:
        for (int64_t i = 0; i < count; ++i) x[i] = 1.0f;
        break;
      case Init::normal:
      case Init::embedding:
        for (int64_t i = 0; i < count; ++i) x[i] = spec_.init_std * rng.normal();
        if (p.init == Init::embedding)
          for (int64_t c = 0; c < v.size(1); ++c) x[c] = 0.0f;  // <pad> = id 0
        break;
      case Init::projection: {
        const int64_t K = v.size(v.rank() - 2), n = v.size(v.rank() - 1);
        switch (spec_.projection_init) {
          case ProjectionInit::normal:
            for (int64_t i = 0; i < count; ++i) x[i] = spec_.init_std * rng.normal();
            break;
          case ProjectionInit::paper: {
            const float std = 1.0f / std::sqrt(static_cast<float>(K));
            for (int64_t i = 0; i < count; ++i) x[i] = std * rng.normal();
            break;
          }
          case ProjectionInit::xavier: {
            const float bound = std::sqrt(6.0f / static_cast<float>(n + K));
            for (int64_t i = 0; i < count; ++i) x[i] = bound * (2.0f * rng.uniform() - 1.0f);
            break;
          }
        }
        break;
      }
      case Init::conv_window: {
        const float w = 1.0f / static_cast<float>(v.size(v.rank() - 1));
        for (int64_t i = 0; i < count; ++i) x[i] = w;
        break;
      }
    }
  }
}

}  // namespace linformer

#include "linformer/model/memory_estimate.h"

#include "linformer/core/check.h"
#include "linformer/core/system_memory.h"

#include <algorithm>

namespace linformer {

namespace {

// The spec cut to `layers` layers, each with the largest k (an upper bound for nonuniform k).
ModelSpec with_layers(ModelSpec spec, int layers) {
  if (!spec.k_per_layer.empty()) {
    const int k = *std::max_element(spec.k_per_layer.begin(), spec.k_per_layer.end());
    spec.k_per_layer.assign(static_cast<size_t>(layers), k);
  }
  spec.layers = layers;
  return spec;
}

// Each layer adds the same buffers: plan one and two layers and extrapolate, instead of
// building every layer's parameters to plan. Planning allocates those small models'
// parameters, so it runs only once the whole model's parameters are known to fit.
double activation_bytes(const ModelSpec& spec, int64_t max_batch, int64_t max_masked, WorkspaceUse use) {
  const auto one =
      static_cast<double>(MlmModel::planned_activation_bytes(with_layers(spec, 1), max_batch, max_masked, use));
  const auto two =
      static_cast<double>(MlmModel::planned_activation_bytes(with_layers(spec, 2), max_batch, max_masked, use));
  return one + (spec.layers - 1) * std::max(two - one, 0.0);
}

// Lower bounds, in floating point, of the parameters (embeddings and each layer's four d × d
// attention and two d × ffn matrices) and of the activations (each layer's hidden states for a
// batch). Sizes far beyond any memory are refused on them before a parameter table of
// `layers` entries is built or the workspace planner's integer sizes could overflow.
double parameter_count_lower_bound(const ModelSpec& s) {
  const double d = s.d_model, layers = s.layers;
  return (static_cast<double>(s.vocab_size) + s.seq_len) * d + layers * (4 * d * d + 2 * d * s.ffn_dim);
}
double activation_bytes_lower_bound(const ModelSpec& s, int64_t max_batch) {
  const bool projected = s.is_linformer() && !s.k_per_layer.empty();
  const double keys = projected ? *std::max_element(s.k_per_layer.begin(), s.k_per_layer.end()) : s.seq_len;
  return sizeof(float) * static_cast<double>(max_batch) * s.seq_len * s.layers * (s.d_model + keys * s.heads);
}

}  // namespace

void check_memory_fits(const ModelSpec& spec, int64_t max_batch, int64_t max_masked, WorkspaceUse use,
                       const std::string& what, const std::string& sized_by) {
  const AvailableMemory available = available_memory();
  // Beyond 1 PiB no machine fits, whatever limit is known, and the exact estimate's integers could
  // wrap around.
  const double copies = use == WorkspaceUse::training ? 4 : 2;  // values, gradients (and moments)
  const double at_least =
      copies * sizeof(float) * parameter_count_lower_bound(spec) + activation_bytes_lower_bound(spec, max_batch);
  if (at_least > 0x1p50)
    LF_FAIL("{} needs at least {}, more than any machine has; it is sized by {}", what, format_bytes(at_least),
            sized_by);
  if (!available.known()) return;
  const auto limit = static_cast<double>(available.bytes);
  // Each layer adds the same parameters: count one and two layers and extrapolate.
  const auto count_of = [](const ModelSpec& s) {
    double n = 0;
    const ParameterTable table = MlmModel::parameter_table(s);
    for (const auto& p : table.entries()) n += static_cast<double>(p.shape.numel());
    return n;
  };
  const double one = count_of(with_layers(spec, 1));
  const double per_layer = std::max(count_of(with_layers(spec, std::min(spec.layers, 2))) - one, 0.0);
  const double count = one + (spec.layers - 1) * per_layer;
  const double parameters = 2 * sizeof(float) * count;  // values and gradients
  const double optimizer = use == WorkspaceUse::training ? 2 * sizeof(float) * count : 0.0;
  const auto refuse = [&](double activations, const std::string& activations_text) {
    LF_FAIL(
        "{} needs about {} (parameters and gradients {}, optimizer moments {}, activations {}), more than the {} "
        "available ({}); it is sized by {}",
        what, format_bytes(parameters + optimizer + activations), format_bytes(parameters), format_bytes(optimizer),
        activations_text, format_bytes(limit), available.source, sized_by);
  };
  if (parameters + optimizer > limit) refuse(0.0, "not estimated");
  const double activations = activation_bytes(spec, max_batch, max_masked, use);
  if (parameters + optimizer + activations > limit) refuse(activations, format_bytes(activations));
}

}  // namespace linformer

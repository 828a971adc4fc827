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
  const auto one = static_cast<double>(MlmModel::planned_activation_bytes(with_layers(spec, 1), max_batch, max_masked, use));
  const auto two = static_cast<double>(MlmModel::planned_activation_bytes(with_layers(spec, 2), max_batch, max_masked, use));
  return one + (spec.layers - 1) * std::max(two - one, 0.0);
}

}  // namespace

void check_memory_fits(const ModelSpec& spec, int64_t max_batch, int64_t max_masked, WorkspaceUse use,
                       const std::string& what, const std::string& sized_by) {
  const AvailableMemory available = available_memory();
  if (!available.known()) return;
  const ParameterTable table = MlmModel::parameter_table(spec);
  double count = 0;
  for (const auto& p : table.entries()) count += static_cast<double>(p.shape.numel());
  const double parameters = 2 * sizeof(float) * count;  // values and gradients
  const double optimizer = use == WorkspaceUse::training ? 2 * sizeof(float) * count : 0.0;
  const auto limit = static_cast<double>(available.bytes);
  const auto refuse = [&](double activations, const std::string& activations_text) {
    LF_FAIL("{} needs about {} (parameters and gradients {}, optimizer moments {}, activations {}), more than the {} "
            "available ({}); it is sized by {}",
            what, format_bytes(parameters + optimizer + activations), format_bytes(parameters), format_bytes(optimizer),
            activations_text, format_bytes(limit), available.source, sized_by);
  };
  if (parameters + optimizer > limit) refuse(0.0, "not estimated");
  const double activations = activation_bytes(spec, max_batch, max_masked, use);
  if (parameters + optimizer + activations > limit) refuse(activations, format_bytes(activations));
}

}  // namespace linformer

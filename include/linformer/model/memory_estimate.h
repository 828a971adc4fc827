#pragma once
// The refusal of a model that does not fit in memory, before it is allocated: `layers = 100000`
// or `batch_size = 40000` must end with the estimate and the keys that drive it, not with
// swapping or an arena error.

#include "linformer/model/mlm_model.h"

#include <cstdint>
#include <string>

namespace linformer {

// Throws linformer::Error when parameters and gradients, the optimizer's moments (training
// only) and the activation workspace of a model of `spec` for batches of up to max_batch
// sequences exceed the memory available now (MemAvailable, or the cgroup's limit): what needs
// it, the estimate by part, the recipe keys (or options) that size it, and what is available.
void check_memory_fits(const ModelSpec& spec, int64_t max_batch, int64_t max_masked, WorkspaceUse use,
                       const std::string& what, const std::string& sized_by);

}  // namespace linformer

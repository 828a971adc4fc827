#pragma once
// Learning rate per update: linear warmup from 0 to optim.lr over optim.warmup_updates,
// then the decay optim.schedule names, reaching optim.end_lr at train.max_updates:
//   polynomial   end + (lr - end) · (1 - p)^power,  p = (u - warmup) / (max_updates - warmup)
//   linear       the same with power 1
//   cosine       end + (lr - end) · (1 + cos(π p)) / 2
//   inverse_sqrt lr · sqrt(warmup / u)  (fairseq; no end)
//   constant     lr
// `update` counts from 1 (the first update uses update = 1).

#include "linformer/config/recipe.h"

#include <cstdint>

namespace linformer {

double learning_rate(const config::OptimConfig& optim, int64_t max_updates, int64_t update);

}  // namespace linformer

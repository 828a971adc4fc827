#pragma once
// What `linformer bench train` prints: the step's summary (shape, time, throughput against the
// measured matmul peak, kernels, threads, memory), the time per model stage and per kernel family,
// and the ceiling (every matmul at the peak).

#include "linformer/bench/train_bench.h"
#include "linformer/config/recipe.h"

#include <string>

namespace linformer {

std::string format_train_bench(const TrainBenchResult& r, const config::Recipe& recipe);

}  // namespace linformer

#pragma once
// Timing of training steps (forward + backward + AdamW) on
// synthetic batches shaped as the recipe says: the numbers `linformer bench train` prints.

#include "linformer/config/recipe.h"
#include "linformer/nn/model_spec.h"

#include <map>
#include <string>
#include <vector>

namespace linformer {

// Matmul FLOPs of one forward pass over B sequences of T tokens with M masked positions
// (2 per multiply-add; elementwise work not counted). A training step costs 3× this:
// backward computes two matmuls (data and weight gradient) for every forward one.

// The best matmul rate this machine sustains through oneDNN: the best of 4 runs of each of a few
// large products (1024³, 1536³, 2048³, 4096×1024×1024, 4096×256×1024), f32 or with bf16 operands
// (bf16:bf16:f32; needs avx512_bf16).
enum class MatmulOperands { f32, bf16 };
double measure_matmul_peak_gflops(MatmulOperands operands = MatmulOperands::f32);

struct StageTime {
  std::string name;
  double forward_ms = 0, backward_ms = 0;  // mean per step
};

struct KernelTime {
  std::string name;
  double ms = 0;      // mean per step
  double calls = 0;   // mean per step
  double gflops = 0;  // matmul only: its FLOPs / its time
};

struct TrainBenchResult {
  int64_t batch = 0, seq_len = 0, masked = 0, threads = 0, steps = 0;
  int64_t last_block_rows = 0;                // rows per sequence the last block computed (MlmModel::last_block_rows)
  std::string thread_placement;               // openmp_thread_placement()
  double median_s = 0, min_s = 0, max_s = 0;  // forward + backward + optimizer
  double optimizer_ms = 0;                    // mean AdamW step
  config::OptimConfig optim{};                // the AdamW settings timed (scripts/bench_torch.py times the same)
  std::vector<StageTime> stages;              // forward and backward per model stage
  std::vector<KernelTime> kernels;            // per kernel family (kernels/kernel_timing.h), optimizer excluded
  std::map<std::string, size_t> matmul_implementations;  // oneDNN kernel name -> primitives of the step
  double tokens_per_s = 0;                               // B·T / median
  double shared_tokens_per_s = 0;                        // the same beside one CPU-bound process (0: not measured)
  double gflops_per_s = 0;                               // 3 × forward FLOPs / median
  double forward_gflop = 0;                              // per step
  double every_row_forward_gflop = 0;                    // per step, had the last block computed every row
  double flops_per_token = 0;                            // 3 × forward FLOPs / (B·T)
  double peak_gflops = 0;  // the peak under the run's precision (the fraction's denominator)
  // The step with every matmul at peak_gflops and the rest as timed (stages + optimizer, matmul
  // kernel time replaced): what faster matmuls alone could give.
  double ceiling_step_ms = 0, ceiling_tokens_per_s = 0;
  double fp32_peak_gflops = 0;  // measure_matmul_peak_gflops() in fp32
  double bf16_peak_gflops = 0;  // and with bf16 operands; 0 where the CPU has no avx512_bf16
  bool bf16 = false;            // bf16 matmuls in effect
  std::string precision_note;   // select_matmul_precision()
  size_t parameter_bytes = 0, activation_bytes = 0;
  long peak_rss_kb = 0;
};

// beside_busy_process: after the timed steps, time them again beside a CPU-bound child process
// (a shared machine): TrainBenchResult::shared_tokens_per_s. every_row: the last block computes
// every row, not only the masked ones (MlmModel::compute_every_row), for a side-by-side.
TrainBenchResult bench_train(const config::Recipe& recipe, int warmup_steps, int timed_steps,
                             bool beside_busy_process = false, bool every_row = false);

std::string to_json(const TrainBenchResult& r, const ModelSpec& spec);

}  // namespace linformer

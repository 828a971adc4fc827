#pragma once
// The paper's inference-efficiency table (Linformer Table 3) on this machine:
// for each sequence length n, the recipe's encoder with full attention against
// Linformer with layerwise sharing at each k < n, inference only (an inference
// workspace: one layer's activations at a time, no backward buffers).
//
// Memory per sequence is the activation memory the model plans for one more
// sequence in the batch (exact: the workspace is planned, not sampled). The
// largest batch within the memory budget counts the parameters too. Time per
// sequence is the median forward pass over a batch of min(largest batch,
// max_timed_batch) sequences, divided by that batch. A cell whose batch of one
// does not fit the budget, or whose one pass would exceed the time limit, is
// reported as such (its memory per sequence is still known).

#include "linformer/config/recipe.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace linformer {

struct AttentionBenchOptions {
  std::vector<int64_t> lengths{512, 1024, 2048, 4096, 8192, 16384, 32768, 65536};  // n
  std::vector<int64_t> ks{128, 256, 512, 1024, 2048};                              // only k < n is run
  size_t memory_budget_bytes = size_t{16} << 30;                                   // the paper's 16 GB V100
  double time_limit_s = 60;                                                        // per cell, for its timed passes
  int64_t max_timed_batch = 16;
  int repeats = 3;  // timed passes after one warm-up pass
};

enum class CellStatus { measured, over_memory_budget, over_time_limit };
const char* status_name(CellStatus s);

struct AttentionCell {
  int64_t n = 0;
  int64_t k = 0;  // 0: full attention
  CellStatus status = CellStatus::measured;
  size_t bytes_per_sequence = 0;  // activations
  size_t fixed_bytes = 0;         // parameters (+ their gradient arena) and per-batch buffers
  int64_t max_batch = 0;          // largest batch within the budget (0: not even one sequence)
  int64_t timed_batch = 0;
  int passes = 0;                             // timed passes
  double seconds_per_sequence = 0;            // median pass / timed_batch (measured cells)
  double estimated_seconds_per_sequence = 0;  // the estimate the time limit was checked against
  double gflops_per_s = 0;
};

struct AttentionBenchResult {
  std::vector<AttentionCell> full;       // one per n
  std::vector<AttentionCell> linformer;  // one per (n, k < n)
  int threads = 0;
  std::string model;      // the encoder's shape, for the report
  std::string precision;  // "fp32" or "bf16" (matmul operands; matmul_bf16_operands() when run)
};

// Runs the grid; `report` is called after every cell (progress lines).
AttentionBenchResult bench_attention(const config::Recipe& recipe, const AttentionBenchOptions& options,
                                     const std::function<void(const AttentionCell&)>& report = {});

// "16GiB", "16G", "500MB", "1.5GiB", "1048576": bytes (K/M/G/T powers of 1024 with or
// without "i"/"B"; "kB"/"MB"/"GB" with B and no i are powers of 1000). Throws on anything else.
size_t parse_memory_size(const std::string& text);

// The paper's layout: rows n, columns k, "speed-up / memory saving" per cell; then every
// cell's numbers. And one CSV row per cell.
std::string format_attention_table(const AttentionBenchResult& r, const AttentionBenchOptions& options);
std::string attention_csv(const AttentionBenchResult& r);

}  // namespace linformer

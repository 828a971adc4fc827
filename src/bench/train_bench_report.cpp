#include "linformer/bench/train_bench_report.h"

#include "linformer/core/openmp_wait.h"
#include "linformer/kernels/context.h"

#include <fmt/format.h>

#include <algorithm>

namespace linformer {

namespace {

std::string model_line(const TrainBenchResult& r, const config::Recipe& recipe, const ModelSpec& spec) {
  const std::string linformer = spec.is_linformer()
                                    ? fmt::format(", k {}, sharing {}, projection {}", spec.k_per_layer[0],
                                                  config::enum_name(spec.sharing), config::enum_name(spec.projection))
                                    : "";
  return fmt::format("recipe {}: {} {} layers, d {}, heads {}, FFN {}, n {}{}, batch {}, {} masked, {} threads\n",
                     recipe.name, config::enum_name(spec.attention), spec.layers, spec.d_model, spec.heads,
                     spec.ffn_dim, spec.seq_len, linformer, r.batch, r.masked, r.threads);
}

std::string speed_lines(const TrainBenchResult& r) {
  std::string text = fmt::format(
      "training step (forward + backward + AdamW): median {:.1f} ms, min {:.1f}, max {:.1f} over {} steps\n"
      "throughput: {:.0f} tokens/s, {:.1f} GFLOP/s = {:.0f}% of the measured {} matmul peak ({:.1f} GFLOP/s)\n"
      "  (matmul FLOPs: {:.2f} GFLOP forward per step, x3 per training step, {:.1f} MFLOP per token)\n",
      r.median_s * 1e3, r.min_s * 1e3, r.max_s * 1e3, r.steps, r.tokens_per_s, r.gflops_per_s,
      100 * r.gflops_per_s / r.peak_gflops, r.bf16 ? "bf16" : "fp32", r.peak_gflops, r.forward_gflop,
      r.flops_per_token * 1e-6);
  text += r.last_block_rows < r.seq_len
              ? fmt::format(
                    "last block: {} of {} rows a sequence (its masked tokens, the only ones the loss reads; "
                    "--every-row computes all)\n",
                    r.last_block_rows, r.seq_len)
              : fmt::format("last block: every row ({} a sequence)\n", r.seq_len);
  return text;
}

std::string machine_lines(const TrainBenchResult& r) {
  std::string implementations;
  for (const auto& [name, primitives] : r.matmul_implementations)
    implementations += fmt::format("{}{} ({} shapes)", implementations.empty() ? "" : ", ", name, primitives);
  const std::string bf16_peak =
      r.bf16_peak_gflops > 0
          ? fmt::format("{:.1f} GFLOP/s", r.bf16_peak_gflops)
          : fmt::format("not available (needs avx512_bf16; oneDNN ISA here: {})", dnnl_cpu_isa_name());
  std::string text = fmt::format(
      "matmul peak probe (best of 5 large shapes): fp32 {:.1f} GFLOP/s, bf16 {}\n"
      "precision: {} (oneDNN ISA here: {}; matmul kernels: {})\nOpenMP waiting: {}\nOpenMP threads: {}\n",
      r.fp32_peak_gflops, bf16_peak, r.precision_note, dnnl_cpu_isa_name(), implementations,
      openmp_wait_policy_description(), r.thread_placement);
  if (r.shared_tokens_per_s > 0)
    text += fmt::format(
        "shared CPU: {:.0f} tokens/s beside one CPU-bound process = {:.0f}% of the idle median "
        "(a fair share: {:.0f}%, the neighbour taking one core of {} or half of one)\n",
        r.shared_tokens_per_s, 100 * r.shared_tokens_per_s / r.tokens_per_s,
        100.0 * std::max(r.threads - 1.0, r.threads / 2.0) / r.threads, r.threads);
  text += fmt::format("memory: parameters {:.1f} MB, activations {:.1f} MB, peak RSS {:.1f} MB\n",
                      r.parameter_bytes / 1e6, r.activation_bytes / 1e6, r.peak_rss_kb / 1e3);
  return text;
}

// Forward and backward per model stage, then the same step by kernel family; what no kernel
// accounts for is the layers' own loops.
std::string time_tables(const TrainBenchResult& r) {
  double total = r.optimizer_ms;
  for (const auto& stage : r.stages) total += stage.forward_ms + stage.backward_ms;
  std::string text = fmt::format("\n{:<18} {:>12} {:>12} {:>8}\n", "stage", "forward ms", "backward ms", "share");
  for (const auto& stage : r.stages)
    text += fmt::format("{:<18} {:>12.1f} {:>12.1f} {:>7.1f}%\n", stage.name, stage.forward_ms, stage.backward_ms,
                        100 * (stage.forward_ms + stage.backward_ms) / total);
  text += fmt::format("{:<18} {:>12} {:>12.1f} {:>7.1f}%\n", "optimizer (AdamW)", "", r.optimizer_ms,
                      100 * r.optimizer_ms / total);
  text += fmt::format("\n{:<24} {:>10} {:>10} {:>8} {:>9}\n", "kernel", "calls", "ms", "share", "GFLOP/s");
  double in_kernels = 0;
  for (const auto& kernel : r.kernels) {
    in_kernels += kernel.ms;
    text += fmt::format("{:<24} {:>10.0f} {:>10.1f} {:>7.1f}% {:>9}\n", kernel.name, kernel.calls, kernel.ms,
                        100 * kernel.ms / total, kernel.gflops > 0 ? fmt::format("{:.1f}", kernel.gflops) : "");
  }
  text += fmt::format("{:<24} {:>10} {:>10.1f} {:>7.1f}%\n", "optimizer (AdamW)", "", r.optimizer_ms,
                      100 * r.optimizer_ms / total);
  const double outside = total - in_kernels - r.optimizer_ms;
  text += fmt::format("{:<24} {:>10} {:>10.1f} {:>7.1f}%\n", "in the layers' own loops", "", outside,
                      100 * outside / total);
  return text;
}

}  // namespace

std::string format_train_bench(const TrainBenchResult& r, const config::Recipe& recipe) {
  const ModelSpec spec = ModelSpec::from_recipe(recipe);
  return model_line(r, recipe, spec) + speed_lines(r) + machine_lines(r) + time_tables(r) +
         fmt::format(
             "\nceiling: every matmul at the probe's {:.1f} GFLOP/s, the rest as timed: {:.1f} ms a step, "
             "{:.0f} tokens/s (this run: {:.0f}% of it)\n",
             r.peak_gflops, r.ceiling_step_ms, r.ceiling_tokens_per_s, 100 * r.tokens_per_s / r.ceiling_tokens_per_s);
}

}  // namespace linformer

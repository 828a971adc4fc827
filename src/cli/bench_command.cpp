#include "commands.h"
#include "linformer/bench/attention_bench.h"
#include "linformer/bench/train_bench.h"
#include "linformer/config/recipe_loader.h"
#include "linformer/core/check.h"
#include "linformer/core/fs.h"
#include "linformer/core/openmp_wait.h"
#include "linformer/kernels/context.h"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <limits>
#include <memory>

namespace linformer::cli {

namespace {
struct BenchAttentionArgs {
  RecipeArgs recipe;
  AttentionBenchOptions options;
  std::string memory_budget = "16GiB";
  std::string csv;
  std::string precision = "fp32";
};

struct BenchTrainArgs {
  RecipeArgs recipe;
  int warmup = 2;
  int steps = 10;
  bool beside_busy_process = false;
  bool every_row = false;
  std::string json;
};
}  // namespace

void add_bench_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("bench", "Benchmarks: training-step throughput and attention efficiency.");
  cmd->require_subcommand(1);

  auto args = std::make_shared<BenchTrainArgs>();
  CLI::App* train = cmd->add_subcommand(
      "train",
      "Time training steps (forward, backward, AdamW) of a recipe's model on synthetic batches (batch size, n "
      "and masking from the recipe): step time (median, min, max), tokens/s, matmul GFLOP/s against a measured "
      "matmul peak, time per model stage and per kernel family, memory.");
  args->recipe.add_to(*train);
  train->add_option("--warmup", args->warmup, "Untimed steps first")->capture_default_str()->check(at_least(0));
  train->add_option("--steps", args->steps, "Timed steps")->capture_default_str()->check(at_least(1));
  train->add_flag("--beside-busy-process", args->beside_busy_process,
                  "Then time the steps again beside a CPU-bound process (a shared machine) and compare");
  train->add_flag("--every-row", args->every_row,
                  "The last block computes every row, not only the masked tokens the loss reads (the same loss and "
                  "gradients, more work): to compare the two");
  train->add_option("--json", args->json, "Also write the result as JSON to this file");
  train->callback([args] {
    const auto recipe = config::load_recipe(args->recipe.path, args->recipe.overrides);
    const ModelSpec spec = ModelSpec::from_recipe(recipe);
    const TrainBenchResult r = bench_train(recipe, args->warmup, args->steps, args->beside_busy_process, args->every_row);
    std::string implementations;
    for (const auto& [name, primitives] : r.matmul_implementations)
      implementations += fmt::format("{}{} ({} shapes)", implementations.empty() ? "" : ", ", name, primitives);
    std::string text = fmt::format(
        "recipe {}: {} {} layers, d {}, heads {}, FFN {}, n {}{}, batch {}, {} masked, {} threads\n"
        "training step (forward + backward + AdamW): median {:.1f} ms, min {:.1f}, max {:.1f} over {} steps\n"
        "throughput: {:.0f} tokens/s, {:.1f} GFLOP/s = {:.0f}% of the measured {} matmul peak ({:.1f} GFLOP/s)\n"
        "  (matmul FLOPs: {:.2f} GFLOP forward per step, x3 per training step, {:.1f} MFLOP per token)\n"
        "last block: {}\n"
        "matmul peak probe (best of 5 large shapes): fp32 {:.1f} GFLOP/s, bf16 {}\n"
        "precision: {} (oneDNN ISA here: {}; matmul kernels: {})\n"
        "OpenMP waiting: {}\nOpenMP threads: {}\n{}"
        "memory: parameters {:.1f} MB, activations {:.1f} MB, peak RSS {:.1f} MB\n\n"
        "{:<18} {:>12} {:>12} {:>8}\n",
        recipe.name, config::enum_name(spec.attention), spec.layers, spec.d_model, spec.heads, spec.ffn_dim,
        spec.seq_len,
        spec.is_linformer() ? fmt::format(", k {}, sharing {}, projection {}", spec.k_per_layer[0],
                                          config::enum_name(spec.sharing), config::enum_name(spec.projection))
                            : "",
        r.batch, r.masked, r.threads, r.median_s * 1e3, r.min_s * 1e3, r.max_s * 1e3, r.steps, r.tokens_per_s,
        r.gflops_per_s, 100 * r.gflops_per_s / r.peak_gflops, r.bf16 ? "bf16" : "fp32", r.peak_gflops,
        r.forward_gflop, r.flops_per_token * 1e-6,
        r.last_block_rows < r.seq_len
            ? fmt::format("{} of {} rows a sequence (its masked tokens, the only ones the loss reads; --every-row "
                          "computes all)", r.last_block_rows, r.seq_len)
            : fmt::format("every row ({} a sequence)", r.seq_len),
        r.fp32_peak_gflops,
        r.bf16_peak_gflops > 0
            ? fmt::format("{:.1f} GFLOP/s", r.bf16_peak_gflops)
            : fmt::format("not available (needs avx512_bf16; oneDNN ISA here: {})", dnnl_cpu_isa_name()),
        r.precision_note, dnnl_cpu_isa_name(), implementations, openmp_wait_policy_description(), r.thread_placement,
        r.shared_tokens_per_s > 0
            ? fmt::format("shared CPU: {:.0f} tokens/s beside one CPU-bound process = {:.0f}% of the idle median "
                          "(a fair share: {:.0f}%, the neighbour taking one core of {} or half of one)\n",
                          r.shared_tokens_per_s, 100 * r.shared_tokens_per_s / r.tokens_per_s,
                          100.0 * std::max(r.threads - 1.0, r.threads / 2.0) / r.threads, r.threads)
            : "",
        r.parameter_bytes / 1e6, r.activation_bytes / 1e6,
        r.peak_rss_kb / 1e3, "stage", "forward ms", "backward ms", "share");
    double total = r.optimizer_ms;
    for (const auto& stage : r.stages) total += stage.forward_ms + stage.backward_ms;
    for (const auto& stage : r.stages)
      text += fmt::format("{:<18} {:>12.1f} {:>12.1f} {:>7.1f}%\n", stage.name, stage.forward_ms, stage.backward_ms,
                          100 * (stage.forward_ms + stage.backward_ms) / total);
    text += fmt::format("{:<18} {:>12} {:>12.1f} {:>7.1f}%\n", "optimizer (AdamW)", "", r.optimizer_ms,
                        100 * r.optimizer_ms / total);
    // The same step by kernel family; what no kernel accounts for is the layers' own loops.
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
    text += fmt::format(
        "\nceiling: every matmul at the probe's {:.1f} GFLOP/s, the rest as timed: {:.1f} ms a step, {:.0f} tokens/s "
        "(this run: {:.0f}% of it)\n",
        r.peak_gflops, r.ceiling_step_ms, r.ceiling_tokens_per_s, 100 * r.tokens_per_s / r.ceiling_tokens_per_s);
    std::cout << text;
    if (!args->json.empty()) write_file_atomic(args->json, to_json(r, spec) + "\n");
  });

  auto att = std::make_shared<BenchAttentionArgs>();
  CLI::App* attention = cmd->add_subcommand(
      "attention",
      "The paper's Table 3 on this machine: the recipe's encoder with Linformer (layerwise sharing) against full "
      "attention, inference only, for each n and k < n: time and activation memory per sequence, speed-up and "
      "memory-saving ratios, the largest batch within the memory budget.");
  att->recipe.add_to(*attention);
  // The model counts positions in 32 bits; lengths beyond the memory budget are reported, not run.
  const long long max_length = std::numeric_limits<int>::max();
  attention->add_option("--lengths", att->options.lengths, "Sequence lengths n")->capture_default_str()->check(in_range(2, max_length));
  attention->add_option("--ks", att->options.ks, "Projected lengths k (each run where k < n)")->capture_default_str()->check(in_range(1, max_length));
  attention->add_option("--memory-budget", att->memory_budget,
                        "Memory for parameters and a batch's activations (e.g. 16GiB, 8G, 500MB)")
      ->capture_default_str();
  attention->add_option("--time-limit", att->options.time_limit_s, "Seconds per cell for its timed passes; a cell whose one sequence is estimated to take longer is reported, not run")
      ->capture_default_str()->check(CLI::PositiveNumber);
  attention->add_option("--max-batch", att->options.max_timed_batch, "Largest batch actually timed (the largest batch within the budget is reported either way)")
      ->capture_default_str()->check(at_least(1));
  attention->add_option("--repeats", att->options.repeats, "Timed passes per cell after one warm-up pass (fewer if the time limit says so)")
      ->capture_default_str()->check(at_least(1));
  attention->add_option("--csv", att->csv, "Also write one row per cell to this CSV file");
  add_precision_option(*attention, att->precision);
  attention->callback([att] {
    use_precision(att->precision);
    const auto recipe = config::load_recipe(att->recipe.path, att->recipe.overrides);
    att->options.memory_budget_bytes = parse_memory_size(att->memory_budget);
    const AttentionBenchResult r = bench_attention(recipe, att->options, [](const AttentionCell& c) {
      const bool measured = c.status == CellStatus::measured;
      std::cerr << fmt::format("n {:>6} {:<16} {:<20} {:>9.1f} MiB/sequence, largest batch {}{}\n", c.n,
                               c.k ? fmt::format("Linformer k={}", c.k) : std::string("full"), status_name(c.status),
                               static_cast<double>(c.bytes_per_sequence) / (1 << 20), c.max_batch,
                               measured ? fmt::format(", {:.1f} ms/sequence at batch {}", c.seconds_per_sequence * 1e3,
                                                      c.timed_batch)
                                        : std::string());
    });
    std::cout << format_attention_table(r, att->options);
    if (!att->csv.empty()) write_file_atomic(att->csv, attention_csv(r));
  });
}

}  // namespace linformer::cli

#include "commands.h"
#include "linformer/bench/attention_bench.h"
#include "linformer/bench/train_bench.h"
#include "linformer/bench/train_bench_report.h"
#include "linformer/config/recipe_loader.h"
#include "linformer/core/check.h"
#include "linformer/core/fs.h"

#include <fmt/format.h>

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

// bench train: the training step's throughput.
void add_bench_train_command(CLI::App& bench) {
  auto args = std::make_shared<BenchTrainArgs>();
  CLI::App* train = bench.add_subcommand(
      "train", "Time training steps of a recipe's model: tokens/s, GFLOP/s against the measured peak.");
  args->recipe.add_to(*train);
  train->add_option("--warmup", args->warmup, "Untimed steps first")->capture_default_str()->check(at_least(0));
  train->add_option("--steps", args->steps, "Timed steps")->capture_default_str()->check(at_least(1));
  train->add_flag("--beside-busy-process", args->beside_busy_process,
                  "Then time the steps again beside a CPU-bound process (a shared machine) and compare");
  train->add_flag("--every-row", args->every_row,
                  "The last block computes every row, not only the masked tokens the loss reads (the same loss and "
                  "gradients, more work): to compare the two");
  train->add_option("--json", args->json, "Also write the result as JSON to this file");
  add_help_footer(
      *train,
      "Time training steps (forward, backward, AdamW) of a recipe's model on synthetic batches (batch size, n "
      "and masking from the recipe): step time (median, min, max), tokens/s, matmul GFLOP/s against a measured "
      "matmul peak, time per model stage and per kernel family, memory.",
      {"linformer bench train --recipe recipes/brown/default.toml --steps 20",
       "linformer bench train --recipe recipes/brown/default.toml --set train.precision=\"bf16\""});
  train->callback([args] {
    const auto recipe = config::load_recipe(args->recipe.path, args->recipe.overrides);
    const ModelSpec spec = ModelSpec::from_recipe(recipe);
    const TrainBenchResult r =
        bench_train(recipe, args->warmup, args->steps, args->beside_busy_process, args->every_row);
    std::cout << format_train_bench(r, recipe);
    if (!args->json.empty()) write_file_atomic(args->json, to_json(r, spec) + "\n");
  });
}

// bench attention: the paper's Table 3.
void add_bench_attention_command(CLI::App& bench) {
  auto att = std::make_shared<BenchAttentionArgs>();
  CLI::App* attention = bench.add_subcommand(
      "attention", "The paper's Table 3 here: Linformer against full attention, time and memory per n and k.");
  att->recipe.add_to(*attention);
  // The model counts positions in 32 bits; lengths beyond the memory budget are reported, not run.
  const long long max_length = std::numeric_limits<int>::max();
  attention->add_option("--lengths", att->options.lengths, "Sequence lengths n")
      ->capture_default_str()
      ->check(in_range(2, max_length));
  attention->add_option("--ks", att->options.ks, "Projected lengths k (each run where k < n)")
      ->capture_default_str()
      ->check(in_range(1, max_length));
  attention
      ->add_option("--memory-budget", att->memory_budget,
                   "Memory for parameters and a batch's activations (e.g. 16GiB, 8G, 500MB)")
      ->capture_default_str();
  attention
      ->add_option("--time-limit", att->options.time_limit_s,
                   "Seconds per cell for its timed passes; a cell whose one sequence is estimated to take longer is "
                   "reported, not run")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  attention
      ->add_option("--max-batch", att->options.max_timed_batch,
                   "Largest batch actually timed (the largest batch within the budget is reported either way)")
      ->capture_default_str()
      ->check(at_least(1));
  attention
      ->add_option("--repeats", att->options.repeats,
                   "Timed passes per cell after one warm-up pass (fewer if the time limit says so)")
      ->capture_default_str()
      ->check(at_least(1));
  attention->add_option("--csv", att->csv, "Also write one row per cell to this CSV file");
  add_precision_option(*attention, att->precision);
  add_help_footer(
      *attention,
      "The paper's Table 3 on this machine: the recipe's encoder with Linformer (layerwise sharing) against full "
      "attention, inference only, for each n and k < n: time and activation memory per sequence, speed-up and "
      "memory-saving ratios, the largest batch within the memory budget.",
      {"linformer bench attention --recipe recipes/brown/default.toml --lengths 512 1024 "
       "--ks 64 128 --csv table3.csv"});
  attention->callback([att] {
    use_precision(att->precision);
    const auto recipe = config::load_recipe(att->recipe.path, att->recipe.overrides);
    att->options.memory_budget_bytes = parse_memory_size(att->memory_budget);
    const AttentionBenchResult r = bench_attention(recipe, att->options, [](const AttentionCell& c) {
      const bool measured = c.status == CellStatus::measured;
      std::cerr << fmt::format(
          "n {:>6} {:<16} {:<20} {:>9.1f} MiB/sequence, largest batch {}{}\n", c.n,
          c.k ? fmt::format("Linformer k={}", c.k) : std::string("full"), status_name(c.status),
          static_cast<double>(c.bytes_per_sequence) / (1 << 20), c.max_batch,
          measured ? fmt::format(", {:.1f} ms/sequence at batch {}", c.seconds_per_sequence * 1e3, c.timed_batch)
                   : std::string());
    });
    std::cout << format_attention_table(r, att->options);
    if (!att->csv.empty()) write_file_atomic(att->csv, attention_csv(r));
  });
}

}  // namespace

void add_bench_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("bench", "Benchmarks: training-step throughput and attention efficiency.");
  cmd->require_subcommand(1);
  add_help_footer(*cmd, "", {"linformer bench train --help", "linformer bench attention --help"});
  add_bench_train_command(*cmd);
  add_bench_attention_command(*cmd);
}

}  // namespace linformer::cli

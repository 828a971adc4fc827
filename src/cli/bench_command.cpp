#include "commands.h"
#include "linformer/bench/train_bench.h"
#include "linformer/config/recipe_loader.h"
#include "linformer/core/check.h"
#include "linformer/core/fs.h"

#include <fmt/format.h>

#include <iostream>
#include <memory>

namespace linformer::cli {

namespace {
struct BenchTrainArgs {
  RecipeArgs recipe;
  int warmup = 2;
  int steps = 10;
  std::string json;
};
}  // namespace

void add_bench_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("bench", "Benchmarks: training-step throughput and attention efficiency.");
  cmd->require_subcommand(1);

  auto args = std::make_shared<BenchTrainArgs>();
  CLI::App* train = cmd->add_subcommand(
      "train",
      "Time forward+backward training steps of a recipe's model on synthetic batches (batch size, n and "
      "masking from the recipe): step time (median, min, max), tokens/s, matmul GFLOP/s.");
  args->recipe.add_to(*train);
  train->add_option("--warmup", args->warmup, "Untimed steps first")->capture_default_str()->check(CLI::NonNegativeNumber);
  train->add_option("--steps", args->steps, "Timed steps")->capture_default_str()->check(CLI::PositiveNumber);
  train->add_option("--json", args->json, "Also write the result as JSON to this file");
  train->callback([args] {
    const auto recipe = config::load_recipe(args->recipe.path, args->recipe.overrides);
    const ModelSpec spec = ModelSpec::from_recipe(recipe);
    const TrainBenchResult r = bench_train(recipe, args->warmup, args->steps);
    std::cout << fmt::format(
        "recipe {}: {} {} layers, d {}, heads {}, FFN {}, n {}{}, batch {}, {} masked, {} threads\n"
        "step (forward + backward, no optimizer): median {:.1f} ms, min {:.1f}, max {:.1f} over {} steps\n"
        "throughput: {:.0f} tokens/s, {:.1f} GFLOP/s (matmul FLOPs: {:.2f} GFLOP forward, x3 per step)\n"
        "memory: parameters {:.1f} MB, activations {:.1f} MB, peak RSS {:.1f} MB\n",
        recipe.name, config::enum_name(spec.attention), spec.layers, spec.d_model, spec.heads, spec.ffn_dim,
        spec.seq_len,
        spec.is_linformer() ? fmt::format(", k {}, sharing {}, projection {}", spec.k_per_layer[0],
                                          config::enum_name(spec.sharing), config::enum_name(spec.projection))
                            : "",
        r.batch, r.masked, r.threads, r.median_s * 1e3, r.min_s * 1e3, r.max_s * 1e3, r.steps, r.tokens_per_s,
        r.gflops_per_s, r.forward_gflop, r.parameter_bytes / 1e6, r.activation_bytes / 1e6, r.peak_rss_kb / 1e3);
    if (!args->json.empty()) write_file_atomic(args->json, to_json(r, spec) + "\n");
  });

  CLI::App* attention = cmd->add_subcommand(
      "attention", "The paper's Table 3 on this machine: Linformer vs full attention, time and memory per sequence.");
  attention->callback([] { throw NotImplemented("linformer bench attention"); });
}

}  // namespace linformer::cli

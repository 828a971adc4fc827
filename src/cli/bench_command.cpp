#include "commands.h"
#include "linformer/config/recipe_loader.h"
#include "linformer/core/check.h"

#include <memory>

namespace linformer::cli {

void add_bench_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("bench", "Benchmarks: training-step throughput and attention efficiency.");
  cmd->require_subcommand(1);

  auto args = std::make_shared<RecipeArgs>();
  CLI::App* train = cmd->add_subcommand(
      "train", "Time training steps of a recipe's model: tokens/s, GFLOP/s, fraction of peak, per-layer times.");
  args->add_to(*train);
  train->callback([args] {
    config::load_recipe(args->path, args->overrides);
    throw NotImplemented("linformer bench train");
  });

  CLI::App* attention = cmd->add_subcommand(
      "attention", "The paper's Table 3 on this machine: Linformer vs full attention, time and memory per sequence.");
  attention->callback([] { throw NotImplemented("linformer bench attention"); });
}

}  // namespace linformer::cli

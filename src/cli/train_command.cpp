#include "commands.h"
#include "linformer/config/recipe_loader.h"
#include "linformer/train/trainer.h"

#include <iostream>
#include <memory>

namespace linformer::cli {

namespace {
struct TrainArgs {
  RecipeArgs recipe;
  bool dump_recipe = false;
  TrainOptions options;
  std::string overlap_allreduce = "auto";  // --overlap-allreduce: auto, on or off
};
}  // namespace

void add_train_command(CLI::App& app) {
  auto args = std::make_shared<TrainArgs>();
  CLI::App* cmd =
      app.add_subcommand("train", "Pretrain a masked-language model (Linformer or Transformer) as a recipe says.");
  args->recipe.add_to(*cmd);
  cmd->add_flag("--dump-recipe", args->dump_recipe,
                "Print the fully resolved recipe (bases, overrides and defaults applied) as TOML and exit");
  cmd->add_option("--resume", args->options.resume,
                  "Continue a run: 'auto' (the newest complete checkpoint in the run directory, or a fresh start if "
                  "there is none) or a checkpoint directory");
  cmd->add_option("--run-dir", args->options.run_dir, "Run directory (default: runs/<recipe name>)");
  cmd->add_flag("--reset-optimizer", args->options.reset_optimizer, "On resume: start AdamW's moments afresh");
  cmd->add_flag("--reset-schedule", args->options.reset_schedule,
                "On resume: count updates (and the learning-rate schedule) from 0 again");
  cmd->add_flag("--reset-data", args->options.reset_data, "On resume: read the training data from the start again");
  cmd->add_option("--peer-timeout", args->options.peer_timeout_seconds,
                  "Under mpirun: seconds a process waits for the others in a collective before it ends the job "
                  "(a process hung; 0: wait forever). Longer than the slowest checkpoint write")
      ->capture_default_str()
      ->check(at_least(0));
  cmd->add_option("--overlap-allreduce", args->overlap_allreduce,
                  "Under mpirun: sum the gradients over the processes during the backward pass, a bucket of "
                  "encoder blocks at a time ('on'), or after it ('off'); 'auto' overlaps when the processes span "
                  "several machines. The same updates either way (bit for bit with 2 processes)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "on", "off"}));
  add_help_footer(
      *cmd,
      "Pretrain a masked-language model as the recipe says, on the data `linformer prepare` wrote. The run "
      "directory receives the resolved recipe, train.log, metrics.csv/metrics.jsonl and checkpoints/. SIGINT or "
      "SIGTERM (SIGUSR1 under mpirun) finishes the current update, writes a checkpoint and exits.",
      {"linformer train --recipe recipes/brown/default.toml --run-dir runs/default",
       "linformer train --recipe recipes/brown/default.toml --run-dir runs/default --resume auto",
       "mpirun -np 2 linformer train --recipe recipes/brown/default.toml --run-dir runs/mpi"});
  cmd->callback([args] {
    if (args->dump_recipe) {
      std::cout << config::dump_recipe(config::load_recipe(args->recipe.path, args->recipe.overrides));
      return;
    }
    args->options.overlap_allreduce = args->overlap_allreduce == "on"    ? OverlapAllreduce::on
                                      : args->overlap_allreduce == "off" ? OverlapAllreduce::off
                                                                         : OverlapAllreduce::automatic;
    args->options.recipe_path = args->recipe.path;
    args->options.overrides = args->recipe.overrides;
    run_training(args->options);
  });
}

}  // namespace linformer::cli

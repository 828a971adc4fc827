#include "commands.h"
#include "linformer/config/recipe_loader.h"
#include "linformer/core/check.h"

#include <iostream>
#include <memory>

namespace linformer::cli {

namespace {
struct TrainArgs {
  RecipeArgs recipe;
  bool dump_recipe = false;
  std::string resume;
  std::string run_dir;
};
}  // namespace

void add_train_command(CLI::App& app) {
  auto args = std::make_shared<TrainArgs>();
  CLI::App* cmd = app.add_subcommand("train", "Pretrain a masked-language model as the recipe says.");
  args->recipe.add_to(*cmd);
  cmd->add_flag("--dump-recipe", args->dump_recipe,
                "Print the fully resolved recipe (bases, overrides and defaults applied) as TOML and exit");
  cmd->add_option("--resume", args->resume,
                  "Continue a run: 'auto' (the newest complete checkpoint in the run directory) or a checkpoint "
                  "path");
  cmd->add_option("--run-dir", args->run_dir, "Run directory (default: runs/<recipe name>)");
  cmd->callback([args] {
    const config::Recipe recipe = config::load_recipe(args->recipe.path, args->recipe.overrides);
    if (args->dump_recipe) {
      std::cout << config::dump_recipe(recipe);
      return;
    }
    throw NotImplemented("linformer train");
  });
}

}  // namespace linformer::cli

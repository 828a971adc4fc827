#include "commands.h"
#include "linformer/config/recipe_loader.h"
#include "linformer/data/prepare.h"

#include <omp.h>

#include <memory>

namespace linformer::cli {

void add_prepare_command(CLI::App& app) {
  auto args = std::make_shared<RecipeArgs>();
  auto force = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "prepare",
      "Read the corpus, train the SentencePiece tokenizer, encode token shards and split train/valid/test "
      "(paths and sizes from the recipe's [data] section).");
  args->add_to(*cmd);
  cmd->add_flag("--force", *force, "Redo every step even if its outputs are up to date");
  cmd->callback([args, force] {
    const config::Recipe recipe = config::load_recipe(args->path, args->overrides);
    if (recipe.threads > 0) omp_set_num_threads(recipe.threads);
    data::log_prepare_summary(data::prepare_data(recipe, *force));
  });
}

}  // namespace linformer::cli

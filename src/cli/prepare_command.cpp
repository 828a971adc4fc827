#include "commands.h"
#include "linformer/config/recipe_loader.h"
#include "linformer/core/check.h"

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
  cmd->callback([args] {
    config::load_recipe(args->path, args->overrides);  // reject a bad recipe before anything else
    throw NotImplemented("linformer prepare");
  });
}

}  // namespace linformer::cli

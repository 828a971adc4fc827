#include "commands.h"

namespace linformer::cli {

void RecipeArgs::add_to(CLI::App& command) {
  command.add_option("-r,--recipe", path, "Recipe file (TOML), e.g. recipes/brown/default.toml")
      ->required()
      ->check(CLI::ExistingFile);
  command
      .add_option("--set", overrides,
                  "Override a recipe option, e.g. --set model.k=256 (repeatable; TOML values, bare words are "
                  "strings)")
      ->take_all();
}

}  // namespace linformer::cli

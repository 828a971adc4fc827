#include "commands.h"
#include "linformer/config/recipe_loader.h"

#include <iostream>

namespace linformer::cli {

void add_options_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "options", "Print the recipe reference: every option with its type, default and meaning (Markdown).");
  add_help_footer(*cmd, "", {"linformer options > recipe_reference.md"});
  cmd->callback([] { std::cout << config::recipe_reference_markdown(); });
}

}  // namespace linformer::cli

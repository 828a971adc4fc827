#include "commands.h"
#include "linformer/config/recipe_loader.h"
#include "linformer/core/file_lock.h"
#include "linformer/core/fs.h"
#include "linformer/data/prepare.h"

#include <fmt/format.h>
#include <omp.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <memory>

namespace linformer::cli {

namespace fs = std::filesystem;

void add_prepare_command(CLI::App& app) {
  auto args = std::make_shared<RecipeArgs>();
  auto force = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "prepare", "Read a corpus, train its tokenizer, write token shards split into train, valid and test.");
  args->add_to(*cmd);
  cmd->add_flag("--force", *force, "Redo every step even if its outputs are up to date");
  add_help_footer(*cmd,
                  "Paths and sizes come from the recipe's [data] section; the tokenizer is SentencePiece, trained on a "
                  "sample of at most data.tokenizer_max_bytes. An up-to-date prepared directory is reused.",
                  {"linformer prepare --recipe recipes/brown/default.toml",
                   "linformer prepare --recipe recipes/brown/base.toml --set 'data.corpus=[\"wiki/\"]' "
                   "--set data.prepared_dir=data/prepared/wiki --set data.vocab_size=32000"});
  cmd->callback([args, force] {
    const config::Recipe recipe = config::load_recipe(args->path, args->overrides);
    if (recipe.threads > 0) omp_set_num_threads(recipe.threads);
    // One prepare per prepared directory; under its lock, what killed ones left is removed.
    std::string dir = recipe.data.prepared_dir;
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();  // the lock beside the directory, not in it
    create_directories_or_fail(fs::path(dir).parent_path().empty() ? "." : fs::path(dir).parent_path().string());
    const FileLock lock(dir + ".lock", fmt::format("prepared directory '{}'", dir));
    for (const auto& path : remove_stale_temporaries_of(dir))
      spdlog::info("removed {}: left by a prepare that did not finish", path);
    data::log_prepare_summary(data::prepare_data(recipe, *force));
  });
}

}  // namespace linformer::cli

// Fuzz target: recipes. config::load_recipe on a TOML file, with --set overrides.
//
// Input: the recipe's text. Lines after a line "#--set" (a TOML comment, so seeds stay valid
// recipes) are --set overrides, one per line. A base.toml (recipes/brown/base.toml) sits beside
// the recipe, so `base = "base.toml"` resolves as it does for the shipped recipes.
// Invariant of an accepted recipe (the README's promise for --dump-recipe): its resolved form
// loads again and dumps to the same text.

#include "fuzz_support.h"
#include "linformer/config/recipe_loader.h"
#include "linformer/core/fs.h"

#include <string>
#include <string_view>
#include <vector>

using namespace linformer;

namespace {

struct Files {
  std::string recipe, resolved;
  Files() : recipe(fuzz::scratch().file("recipe.toml")), resolved(fuzz::scratch().file("resolved.toml")) {
    fuzz::write_bytes(fuzz::scratch().file("base.toml"),
                      read_file(std::string(LINFORMER_SOURCE_DIR) + "/recipes/brown/base.toml"));
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Files files;
  const std::string_view input = fuzz::as_text(data, size);
  const std::string_view marker = "\n#--set\n";
  const size_t split = input.find(marker);
  std::vector<std::string> overrides;
  if (split != std::string_view::npos) {
    std::string_view rest = input.substr(split + marker.size());
    while (!rest.empty()) {
      const size_t nl = rest.find('\n');
      overrides.emplace_back(rest.substr(0, nl));
      rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    }
  }
  fuzz::write_bytes(files.recipe, input.substr(0, split));

  config::Recipe recipe;
  if (!fuzz::accepts([&] { recipe = config::load_recipe(files.recipe, overrides); })) return 0;
  const std::string dumped = config::dump_recipe(recipe);
  fuzz::write_bytes(files.resolved, dumped);
  std::string again;
  const bool reloads = fuzz::accepts([&] { again = config::dump_recipe(config::load_recipe(files.resolved)); });
  FUZZ_ASSERT(reloads, "the resolved recipe does not load:\n{}", dumped);
  FUZZ_ASSERT(again == dumped, "the resolved recipe changes when loaded again:\n{}\n---\n{}", dumped, again);
  return 0;
}

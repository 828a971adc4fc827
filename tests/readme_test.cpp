// The README's recipe reference is the one the program prints.

#include "linformer/config/recipe_loader.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace linformer::config {
namespace {

TEST(Readme, RecipeReferenceIsCurrent) {
  std::ifstream in(std::string(LINFORMER_SOURCE_DIR) + "/README.md");
  ASSERT_TRUE(in) << "README.md not found";
  std::stringstream text;
  text << in.rdbuf();
  const std::string readme = text.str();
  const std::string begin = "<!-- recipe-reference:begin -->\n", end = "<!-- recipe-reference:end -->";
  const size_t b = readme.find(begin), e = readme.find(end);
  ASSERT_NE(b, std::string::npos);
  ASSERT_NE(e, std::string::npos);
  EXPECT_EQ(readme.substr(b + begin.size(), e - b - begin.size()), recipe_reference_markdown())
      << "README.md's recipe reference is stale: run scripts/update_readme.sh";
}

}  // namespace
}  // namespace linformer::config

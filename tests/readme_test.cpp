// The guide's recipe reference (docs/recipes.md) is the one the program prints, and every test
// the README, RELIABILITY.md, CONTRIBUTING.md and the guide (docs/*.md) cite as proof of a promise
// exists.

#include "linformer/config/recipe_loader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace linformer::config {
namespace {

TEST(Readme, RecipeReferenceIsCurrent) {
  std::ifstream in(std::string(LINFORMER_SOURCE_DIR) + "/docs/recipes.md");
  ASSERT_TRUE(in) << "docs/recipes.md not found";
  std::stringstream text;
  text << in.rdbuf();
  const std::string readme = text.str();
  const std::string begin = "<!-- recipe-reference:begin -->\n", end = "<!-- recipe-reference:end -->";
  const size_t b = readme.find(begin), e = readme.find(end);
  ASSERT_NE(b, std::string::npos);
  ASSERT_NE(e, std::string::npos);
  EXPECT_EQ(readme.substr(b + begin.size(), e - b - begin.size()), recipe_reference_markdown())
      << "docs/recipes.md's recipe reference is stale: run scripts/update_readme.sh";
}

// `Suite.Name` or `Suite.*` in backticks, for the GoogleTest suites (capitalised; CTest's own
// tests such as `fuzz.recipe` or `scripts.run_experiments` are lower case).
TEST(Readme, EveryCitedTestExists) {
  std::set<std::string> suites, tests;
  const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
  for (int i = 0; i < unit.total_test_suite_count(); ++i) {
    const ::testing::TestSuite& suite = *unit.GetTestSuite(i);
    suites.insert(suite.name());
    for (int j = 0; j < suite.total_test_count(); ++j)
      tests.insert(std::string(suite.name()) + "." + suite.GetTestInfo(j)->name());
  }
  const std::regex cited(R"(`([A-Z][A-Za-z0-9]*)\.([A-Z][A-Za-z0-9]*|\*)`)");
  int count = 0;
  std::vector<std::string> files = {"README.md", "RELIABILITY.md", "CONTRIBUTING.md"};
  std::vector<std::string> guide;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(LINFORMER_SOURCE_DIR) + "/docs"))
    if (entry.path().extension() == ".md") guide.push_back("docs/" + entry.path().filename().string());
  std::sort(guide.begin(), guide.end());
  ASSERT_FALSE(guide.empty()) << "docs/*.md not found";
  files.insert(files.end(), guide.begin(), guide.end());
  for (const std::string& file : files) {
    std::ifstream in(std::string(LINFORMER_SOURCE_DIR) + "/" + file);
    ASSERT_TRUE(in) << file << " not found";
    std::stringstream text;
    text << in.rdbuf();
    const std::string doc = text.str();
    for (auto it = std::sregex_iterator(doc.begin(), doc.end(), cited); it != std::sregex_iterator(); ++it, ++count) {
      const std::string suite = (*it)[1], name = (*it)[2];
      if (name == "*")
        EXPECT_TRUE(suites.count(suite)) << file << " cites `" << suite << ".*`: no such suite";
      else
        EXPECT_TRUE(tests.count(suite + "." + name)) << file << " cites `" << suite << "." << name << "`: no such test";
    }
  }
  EXPECT_GT(count, 30) << "the citation pattern no longer finds the cited tests";
}

}  // namespace
}  // namespace linformer::config

// The README's recipe reference is the one the program prints, and every test the README and
// RELIABILITY.md cite as proof of a promise exists.

#include "linformer/config/recipe_loader.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
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
  for (const char* file : {"README.md", "RELIABILITY.md"}) {
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

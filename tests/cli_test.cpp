// The linformer binary as a user meets it: help, version, recipes, exit codes.

#include "test_util.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace linformer {
namespace {

using testing::run_linformer;
using testing::TempDir;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(Cli, HelpListsEverySubcommand) {
  const auto r = run_linformer("--help");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (const char* command : {"prepare", "train", "eval", "fill-mask", "bench", "options"})
    EXPECT_THAT(r.output, HasSubstr(command));
}

TEST(Cli, EverySubcommandHasHelp) {
  for (const char* command : {"prepare", "train", "eval", "fill-mask", "bench", "bench train", "bench attention", "options"}) {
    const auto r = run_linformer(std::string(command) + " --help");
    EXPECT_EQ(r.exit_code, 0) << command << ": " << r.output;
    EXPECT_THAT(r.output, HasSubstr("Usage:")) << command;
  }
}

TEST(Cli, VersionNamesOneDnnAndTheIsa) {
  const auto r = run_linformer("--version");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("linformer 0."));
  EXPECT_THAT(r.output, HasSubstr("oneDNN 2."));
  EXPECT_THAT(r.output, HasSubstr("CPU ISA used by oneDNN: "));
}

TEST(Cli, UsageErrorsExitWithTwo) {
  EXPECT_EQ(run_linformer("").exit_code, 2);
  EXPECT_EQ(run_linformer("frobnicate").exit_code, 2);
  EXPECT_EQ(run_linformer("train").exit_code, 2);  // --recipe is required
  EXPECT_EQ(run_linformer("train --recipe does/not/exist.toml").exit_code, 2);
  const auto r = run_linformer("--log-level loud options");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("unknown log level 'loud'"));
}

TEST(Cli, DumpRecipePrintsTheResolvedRecipe) {
  const auto r = run_linformer("train --recipe recipes/ci/tiny.toml --set model.k=8 --dump-recipe");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("[model]"));
  EXPECT_THAT(r.output, HasSubstr("\nk = 8\n"));
  EXPECT_THAT(r.output, HasSubstr("name = \"tiny\""));
}

TEST(Cli, MisspeltKeyFailsWithFileKeyAndSuggestion) {
  TempDir dir;
  const std::string path = dir.write("typo.toml", "base = \"" LINFORMER_SOURCE_DIR "/recipes/ci/tiny.toml\"\n[model]\nkk = 64\n");
  const auto r = run_linformer("train --recipe " + path + " --dump-recipe");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr(path + ":3:1: unknown key 'model.kk' (did you mean 'model.k'?)"));
  EXPECT_THAT(r.output, Not(HasSubstr("[model]")));  // nothing printed as if it had worked
}

TEST(Cli, OptionsPrintsTheReference) {
  const auto r = run_linformer("options");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("`model.sharing`"));
}

}  // namespace
}  // namespace linformer

// The linformer binary as a user meets it: help, version, recipes, exit codes.

#include "linformer/core/openmp_wait.h"
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

// OpenMP threads spin only briefly unless the user chose a policy (core/openmp_wait.h): the
// program re-executes itself with GOMP_SPINCOUNT set, and says which policy is in effect.
TEST(Cli, OpenmpSpinningIsBoundedUnlessTheUserChoseAPolicy) {
  const std::string binary = std::string("'") + LINFORMER_BINARY + "'";
  auto version = [&](const std::string& env) {
    return testing::run_command("env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT " + env + " " + binary + " --version");
  };
  const auto by_default = version("");
  ASSERT_EQ(by_default.exit_code, 0) << by_default.output;
  EXPECT_THAT(by_default.output, HasSubstr("OpenMP waiting: GOMP_SPINCOUNT=" + std::to_string(kOpenmpSpinCount) +
                                           " (the program's default"));
  const auto spin = version("GOMP_SPINCOUNT=123");
  EXPECT_THAT(spin.output, HasSubstr("OpenMP waiting: GOMP_SPINCOUNT=123 (set by the environment)"));
  const auto passive = version("OMP_WAIT_POLICY=passive");
  EXPECT_THAT(passive.output, HasSubstr("OpenMP waiting: OMP_WAIT_POLICY=passive (set by the environment)"));
  // Arguments and exit codes survive the re-execution.
  EXPECT_EQ(testing::run_command("env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT " + binary + " frobnicate").exit_code, 2);
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

TEST(Cli, InferenceCommandsTakeAPrecision) {
  for (const char* command : {"eval", "fill-mask", "classify", "bench attention"}) {
    const auto help = testing::run_linformer(std::string(command) + " --help");
    EXPECT_THAT(help.output, HasSubstr("--precision")) << command;
    const auto wrong = testing::run_linformer(std::string(command) + " --precision fp16");
    EXPECT_EQ(wrong.exit_code, 2) << command << ": " << wrong.output;
    EXPECT_THAT(wrong.output, HasSubstr("fp16 not in {fp32,bf16}")) << command;
  }
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

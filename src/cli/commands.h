#pragma once
// Each subcommand registers its options and its action on the app.
// The actions only read their options and call the library (thin mains).

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace linformer::cli {

// --recipe and --set, shared by the commands that read a recipe.
struct RecipeArgs {
  std::string path;
  std::vector<std::string> overrides;
  void add_to(CLI::App& command);
};

// An integer option of at least `lo`: "--top-k: 0 is less than 1" (CLI11's PositiveNumber
// states a range up to 1.8e308 and lets fractions through).
CLI::Validator at_least(long long lo);
// An integer option in [lo, hi]: "--lengths: 5000000000 is more than 2147483647".
CLI::Validator in_range(long long lo, long long hi);

// --precision fp32|bf16, for the commands that only run the model forward (eval, fill-mask,
// classify, bench attention): the precision of its matmuls. use_precision() selects it before
// the model runs; bf16 on a CPU without avx512_bf16 warns and runs fp32.
void add_precision_option(CLI::App& command, std::string& precision);
void use_precision(const std::string& precision);

// Ends a command's help with what its one-line description leaves out (`details`, may be empty)
// and example command lines (every option they use is the command's own, and every recipe they
// name exists: Cli.EveryCommandsHelpEndsWithExamples).
void add_help_footer(CLI::App& command, const std::string& details, const std::vector<std::string>& examples);

void add_prepare_command(CLI::App& app);
void add_train_command(CLI::App& app);
void add_eval_command(CLI::App& app);
void add_fill_mask_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_finetune_command(CLI::App& app);
void add_classify_command(CLI::App& app);
void add_options_command(CLI::App& app);

}  // namespace linformer::cli

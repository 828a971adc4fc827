#include "commands.h"
#include "linformer/core/check.h"

#include <memory>

namespace linformer::cli {

namespace {
struct EvalArgs {
  std::string checkpoint;
  std::string split = "valid";
  std::vector<std::string> text_files;
};
}  // namespace

void add_eval_command(CLI::App& app) {
  auto args = std::make_shared<EvalArgs>();
  CLI::App* cmd = app.add_subcommand(
      "eval", "Masked-LM perplexity and accuracy of a checkpoint on a prepared split or on raw text files.");
  cmd->add_option("-c,--checkpoint", args->checkpoint, "Checkpoint directory")->required();
  auto* split = cmd->add_option("--split", args->split, "Prepared split to evaluate")
                    ->check(CLI::IsMember({"valid", "test"}))
                    ->capture_default_str();
  cmd->add_option("--text", args->text_files, "Raw text files, tokenised with the checkpoint's tokenizer")
      ->check(CLI::ExistingFile)
      ->excludes(split);
  // The callback owns the parsed values (CLI11 writes into *args while parsing).
  cmd->callback([args] { throw NotImplemented("linformer eval"); });
}

}  // namespace linformer::cli

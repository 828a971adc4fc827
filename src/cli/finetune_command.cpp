#include "commands.h"
#include "linformer/finetune/classify.h"
#include "linformer/finetune/finetuner.h"

#include <iostream>
#include <memory>

namespace linformer::cli {

void add_finetune_command(CLI::App& app) {
  auto recipe = std::make_shared<RecipeArgs>();
  auto options = std::make_shared<FinetuneOptions>();
  CLI::App* cmd = app.add_subcommand(
      "finetune", "Fine-tune a pretrained encoder with a classification head on labelled documents.");
  recipe->add_to(*cmd);
  cmd->add_option("--checkpoint", options->checkpoint,
                  "The pretraining checkpoint directory (or run directory: its newest checkpoint) whose encoder is "
                  "fine-tuned, or 'none' for a random encoder (default: finetune.checkpoint)");
  cmd->add_option("--run-dir", options->run_dir, "Run directory (default: runs/<recipe name>)");
  cmd->add_option("--resume", options->resume,
                  "Continue a run: 'auto' (the newest complete checkpoint in the run directory, or a fresh start if "
                  "there is none) or a checkpoint directory");
  add_help_footer(
      *cmd,
      "Fine-tune a pretrained encoder with a classification head on labelled documents (the recipe's [finetune] "
      "section). The run directory receives recipe.toml, train.log, metrics.csv/metrics.jsonl, checkpoints/ (one per "
      "epoch) and results.json. SIGINT, SIGTERM or SIGUSR1 writes a checkpoint and exits.",
      {"linformer finetune --recipe recipes/finetune/spam.toml --checkpoint runs/default --run-dir "
       "runs/spam",
       "linformer finetune --recipe recipes/finetune/spam.toml --run-dir runs/spam --resume auto"});
  cmd->callback([recipe, options] {
    options->recipe_path = recipe->path;
    options->overrides = recipe->overrides;
    run_finetuning(*options);
  });
}

void add_classify_command(CLI::App& app) {
  auto options = std::make_shared<ClassifyOptions>();
  CLI::App* cmd = app.add_subcommand("classify", "Label documents with a fine-tuned checkpoint: JSON lines on stdout.");
  cmd->add_option("--checkpoint", options->checkpoint,
                  "A checkpoint directory of linformer finetune, or its run directory (its newest checkpoint)")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("files", options->files, "Documents to classify")->required()->check(CLI::ExistingFile);
  cmd->add_option("--text-field", options->text_field, "JSON lines: the field that holds the text")
      ->capture_default_str();
  cmd->add_option("--batch-size", options->batch_size, "Documents per forward pass")
      ->capture_default_str()
      ->check(at_least(1));
  auto precision = std::make_shared<std::string>("fp32");
  add_precision_option(*cmd, *precision);
  add_help_footer(
      *cmd,
      "Label documents with a fine-tuned checkpoint: one JSON line per document on stdout, with its label and every "
      "label's probability. JSON-lines files (.jsonl, .json, optionally .gz) give a document per line; any other file "
      "is one plain-text document.",
      {"linformer classify --checkpoint runs/spam message.txt more_messages.jsonl"});
  cmd->callback([options, precision] {
    use_precision(*precision);
    run_classify(*options, std::cout);
  });
}

}  // namespace linformer::cli

#include "commands.h"
#include "linformer/infer/inference.h"

#include "linformer/core/fs.h"
#include "linformer/kernels/matmul.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>

namespace linformer::cli {

namespace {

// The report as eval prints it: the totals, then the baselines and breakdowns asked for.
void print_eval_report(const EvalReport& report) {
  const auto& r = report.result;
  std::cout << fmt::format(
      "{}: loss {:.4f} nats, perplexity {:.2f}, accuracy {:.4f} over {} masked tokens ({} batches)\n", report.source,
      r.loss(), r.perplexity(), r.accuracy(), r.masked, r.batches);
  if (report.targets_digest)
    std::cout << fmt::format("same targets at any n: the masked tokens' digest is {:016x}\n", *report.targets_digest);
  if (report.has_unigram)
    std::cout << fmt::format(
        "unigram baseline (training-split token frequencies) on the same tokens: perplexity "
        "{:.2f}; the model's is {:.3f} × that\n",
        r.unigram_perplexity(), r.perplexity() / r.unigram_perplexity());
  if (report.shuffled)
    std::cout << fmt::format(
        "words shuffled within each sentence: perplexity {:.2f}, accuracy {:.4f}; {:.3f} × the "
        "ordered text's perplexity\n",
        report.shuffled->perplexity(), report.shuffled->accuracy(), report.shuffled->perplexity() / r.perplexity());
  if (report.by_context) {
    const auto line = [&](const char* what, const EvalResult& g) {
      std::cout << fmt::format(
          "  {}: {} masked tokens ({:.1f}%), perplexity {:.2f}, accuracy {:.4f}{}\n", what, g.masked,
          100.0 * static_cast<double>(g.masked) / static_cast<double>(r.masked), g.perplexity(), g.accuracy(),
          report.has_unigram ? fmt::format(", unigram baseline {:.2f}", g.unigram_perplexity()) : std::string());
    };
    std::cout << "by context (is the target's word elsewhere in its sequence?):\n";
    line("in context", report.by_context->in_context);
    line("not in context", report.by_context->not_in_context);
  }
}

// The report as --json writes it.
nlohmann::json eval_report_json(const EvalReport& report) {
  const auto& r = report.result;
  nlohmann::json j = {{"source", report.source},
                      {"checkpoint", report.checkpoint},
                      {"loss", r.loss()},
                      {"perplexity", r.perplexity()},
                      {"accuracy", r.accuracy()},
                      {"masked", r.masked},
                      {"batches", r.batches},
                      {"tokens", r.tokens},
                      {"precision", matmul_bf16_operands() ? "bf16" : "fp32"}};
  if (report.targets_digest) j["targets_digest"] = fmt::format("{:016x}", *report.targets_digest);
  if (report.has_unigram) {
    j["unigram_perplexity"] = r.unigram_perplexity();
    j["ratio_to_unigram"] = r.perplexity() / r.unigram_perplexity();
  }
  if (report.shuffled) {
    j["shuffled_words"] = {{"loss", report.shuffled->loss()},
                           {"perplexity", report.shuffled->perplexity()},
                           {"accuracy", report.shuffled->accuracy()}};
    j["word_order_ratio"] = report.shuffled->perplexity() / r.perplexity();
  }
  if (report.by_context) {
    const auto group = [&](const EvalResult& g) {
      nlohmann::json out = {
          {"masked", g.masked}, {"loss", g.loss()}, {"perplexity", g.perplexity()}, {"accuracy", g.accuracy()}};
      if (report.has_unigram) out["unigram_perplexity"] = g.unigram_perplexity();
      return out;
    };
    j["by_context"] = {{"in_context", group(report.by_context->in_context)},
                       {"not_in_context", group(report.by_context->not_in_context)}};
  }
  return j;
}

}  // namespace

void add_eval_command(CLI::App& app) {
  auto args = std::make_shared<EvalOptions>();
  CLI::App* cmd = app.add_subcommand(
      "eval", "Masked-LM perplexity and accuracy of a checkpoint on a prepared split or on text files.");
  cmd->add_option("-c,--checkpoint", args->checkpoint,
                  "Checkpoint directory (e.g. runs/default/checkpoints/checkpoint_00000450), or a run directory for "
                  "its newest checkpoint")
      ->required()
      ->check(CLI::ExistingDirectory);
  auto* split = cmd->add_option("--split", args->split, "Prepared split to evaluate")
                    ->check(CLI::IsMember({"valid", "test"}))
                    ->capture_default_str();
  cmd->add_option("--text", args->text_files,
                  "Raw text files or directories (plain text, JSON lines, WikiExtractor, .gz), tokenised with the "
                  "checkpoint's tokenizer")
      ->excludes(split);
  cmd->add_option("--batch-size", args->batch_size, "Sequences per batch (default: the recipe's)")->check(at_least(1));
  cmd->add_option("--max-batches", args->max_batches, "Evaluate at most this many batches (default: all)")
      ->check(at_least(1));
  cmd->add_flag("--shuffle-words", args->shuffle_words,
                "Also evaluate with the words of each sequence in random order (the same masked targets, carried "
                "with their words): how much the model uses word order");
  cmd->add_flag("--by-context", args->by_context,
                "Also score apart the masked targets whose word occurs elsewhere in their sequence (copyable from "
                "context) and the others: how much of the model's perplexity comes from copying");
  cmd->add_flag("--same-targets", args->same_targets,
                "Mask each token by its place in the split (at validation.mask_probability, drawn from data.seed), "
                "not by block: checkpoints of any n are scored on the same tokens, so their perplexities compare "
                "(with every batch: no --max-batches). Prints a digest of the targets to check it");
  auto json_path = std::make_shared<std::string>();
  cmd->add_option("--json", *json_path, "Also write the result as JSON to this file");
  auto precision = std::make_shared<std::string>("fp32");
  add_precision_option(*cmd, *precision);
  add_help_footer(
      *cmd,
      "Masked-LM perplexity and accuracy of a checkpoint on a prepared split or on raw text files (masks drawn "
      "with the recipe's data.seed and masking settings, the same every time).",
      {"linformer eval -c runs/default --split test",
       "linformer eval -c runs/default --text notes.txt --shuffle-words --json eval.json",
       "linformer eval -c runs/n512 --split valid --same-targets --json n512.json"});
  cmd->callback([args, json_path, precision] {
    use_precision(*precision);
    const EvalReport report = run_eval(*args);
    print_eval_report(report);
    if (!json_path->empty()) write_file_atomic(*json_path, eval_report_json(report).dump(2) + "\n");
  });
}

void add_fill_mask_command(CLI::App& app) {
  struct Args {
    std::string checkpoint;
    std::vector<std::string> texts;
    int top_k = 5;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "fill-mask", "The top-k predictions for each <mask> in a text, with probabilities (as Hugging Face's).");
  cmd->add_option("-c,--checkpoint", args->checkpoint,
                  "Checkpoint directory, or a run directory for its newest checkpoint")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--top-k", args->top_k, "Predictions per mask")->capture_default_str()->check(at_least(1));
  cmd->add_option("text", args->texts, "Text with one or more <mask>, e.g. \"The <mask> sat on the mat.\"")->required();
  auto precision = std::make_shared<std::string>("fp32");
  add_precision_option(*cmd, *precision);
  add_help_footer(*cmd, "", {"linformer fill-mask -c runs/default \"The <mask> sat on the mat.\""});
  cmd->callback([args, precision] {
    use_precision(*precision);
    for (const auto& text : args->texts) {
      const auto masks = fill_mask(args->checkpoint, text, args->top_k);
      std::cout << text << "\n";
      for (size_t m = 0; m < masks.size(); ++m) {
        if (masks.size() > 1) std::cout << fmt::format("  <mask> {}:\n", m + 1);
        for (const auto& p : masks[m])
          std::cout << fmt::format("  {:7.4f}  {:<16} {}\n", p.probability, fmt::format("'{}'", p.token), p.sequence);
      }
    }
  });
}

}  // namespace linformer::cli

#include "linformer/infer/inference.h"

#include "linformer/config/recipe_loader.h"
#include "linformer/core/check.h"
#include "linformer/core/fs.h"
#include "linformer/core/rng.h"
#include "linformer/core/thread_placement.h"
#include "linformer/data/batcher.h"
#include "linformer/data/corpus.h"
#include "linformer/data/document_encoder.h"
#include "linformer/data/prepared.h"
#include "linformer/data/shard.h"
#include "linformer/data/special_tokens.h"
#include "linformer/data/tokenizer.h"
#include "linformer/data/word_order.h"
#include "linformer/model/batch_adapter.h"
#include "linformer/model/memory_estimate.h"
#include "linformer/nn/weights_file.h"
#include "linformer/train/checkpoint.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>

namespace linformer {

namespace fs = std::filesystem;

namespace {

// A checkpoint opened for inference.
struct Loaded {
  std::string checkpoint;
  config::Recipe recipe;
  data::Tokenizer tokenizer;
  std::unique_ptr<MlmModel> model;
};

// max_masked ≤ 0: as many as the recipe's validation masking can place in a batch; with
// stream_masks each token is drawn on its own, so a row may hold any number of them.
Loaded load(const std::string& requested, int64_t batch_size, int64_t max_masked, bool stream_masks = false) {
  const std::string checkpoint = resolve_checkpoint(requested);
  verify_checkpoint(checkpoint);
  Loaded l{checkpoint, config::load_written_recipe((fs::path(checkpoint) / "recipe.toml").string()),
           data::Tokenizer::load((fs::path(checkpoint) / "tokenizer.model").string()), nullptr};
  const std::string weights = (fs::path(checkpoint) / "model.safetensors").string();
  const ModelSpec spec = read_weights_spec(weights);
  if (batch_size <= 0) batch_size = l.recipe.train.batch_size;
  if (max_masked <= 0)
    max_masked = stream_masks ? batch_size * spec.seq_len
                              : max_masked_per_batch(data::validation_masking(l.recipe), batch_size, spec.seq_len);
  check_memory_fits(spec, batch_size, max_masked, WorkspaceUse::inference, "evaluation",
                    fmt::format("the batch size ({}, --batch-size or the recipe's) × n = {} and the checkpoint's model "
                                "({} layers, d_model {}, vocabulary {})",
                                batch_size, spec.seq_len, spec.layers, spec.d_model, spec.vocab_size));
  l.model = std::make_unique<MlmModel>(spec, batch_size, max_masked, WorkspaceUse::inference);
  load_weights(weights, l.model->params());
  return l;
}

// A batch's targets, each as its place in the split's token stream and its id, summed as mixed
// hashes so the total does not depend on which batch or row holds a target.
uint64_t targets_digest(const data::Batch& batch, const data::TokenBlocks& blocks) {
  uint64_t digest = 0;
  for (size_t i = 0; i < batch.target_positions.size(); ++i) {
    const int64_t row = batch.target_positions[i] / batch.seq_len, t = batch.target_positions[i] % batch.seq_len;
    const uint64_t place = blocks.block(batch.block_ids[static_cast<size_t>(row)]).begin + static_cast<uint64_t>(t) - 1;
    digest += mix64(place * 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(batch.target_ids[i]));
  }
  return digest;
}

// The evaluation of `tokens` into report.result, and with shuffle_words into report.shuffled too.
void evaluate_tokens(Loaded& l, const data::TokenStream& tokens, const EvalOptions& options, int batch_size,
                     const data::UnigramModel* unigram, EvalReport& report) {
  const data::TokenBlocks blocks(tokens, l.model->spec().seq_len, l.recipe.data.break_mode);
  const uint64_t seed = config::data_seed(l.recipe);  // validation's masks: runs of other seeds compare
  const data::Masker masker(data::validation_masking(l.recipe), l.model->spec().vocab_size, l.tokenizer.word_starts(),
                            seed);
  data::BatcherOptions batching = data::evaluation_options(batch_size, seed);
  batching.stream_mask = options.same_targets;
  data::Batcher batcher(blocks, masker, batching);
  if (options.by_context) report.by_context.emplace();
  if (options.same_targets) report.targets_digest = 0;
  const EvalObserver observe = [&](const data::Batch& batch, const MlmModel& model) {
    if (report.by_context) report.by_context->add(batch, model.logits(), unigram);
    if (report.targets_digest) *report.targets_digest += targets_digest(batch, blocks);
  };
  report.result = evaluate(*l.model, batcher, options.max_batches, unigram, {}, {}, observe);
  if (!options.shuffle_words) return;
  const auto shuffle = [&](data::Batch& batch) { data::shuffle_words(batch, l.tokenizer.word_starts(), seed); };
  report.shuffled = evaluate(*l.model, batcher, options.max_batches, unigram, {}, shuffle);
}

// The unigram baseline of the checkpoint's prepared data, when that data is still there and
// has the checkpoint's vocabulary (for raw text it is optional: the text may be all there is).
std::unique_ptr<data::UnigramModel> unigram_of_prepared(const Loaded& l) {
  const std::string dir = l.recipe.data.prepared_dir;
  if (!fs::exists(fs::path(dir) / "meta.json")) return nullptr;
  try {
    const data::PreparedData prepared = data::open_prepared(dir, /*verify_checksums=*/false);
    if (prepared.tokenizer.hash() != l.tokenizer.hash()) return nullptr;
    return std::make_unique<data::UnigramModel>(prepared.train);
  } catch (const Error& e) {
    spdlog::info("no unigram baseline: {}", e.what());
    return nullptr;
  }
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// The evaluation of the split or the text files that `options` name.
EvalReport evaluate_source(const EvalOptions& options) {
  Loaded l = load(options.checkpoint, options.batch_size, 0, options.same_targets);
  const int batch_size = options.batch_size > 0 ? options.batch_size : l.recipe.train.batch_size;
  EvalReport report;
  report.checkpoint = l.checkpoint;
  if (options.text_files.empty()) {
    LF_CHECK(options.split == "valid" || options.split == "test", "--split must be valid or test, not '{}'",
             options.split);
    const data::PreparedData prepared = data::open_prepared(l.recipe.data.prepared_dir);
    if (prepared.tokenizer.hash() != l.tokenizer.hash())
      LF_FAIL("the prepared data in '{}' was tokenised with another vocabulary than checkpoint {}",
              l.recipe.data.prepared_dir, options.checkpoint);
    const data::UnigramModel unigram(prepared.train);
    evaluate_tokens(l, prepared.shard(options.split == "valid" ? data::Split::valid : data::Split::test), options,
                    batch_size, &unigram, report);
    report.has_unigram = true;
    report.source = fmt::format("the {} split of {}", options.split, l.recipe.data.prepared_dir);
    return report;
  }
  // Raw text: read, tokenise and encode like prepare does, in memory.
  data::CorpusOptions corpus;
  corpus.inputs = options.text_files;
  data::CorpusReader reader(corpus);
  data::EncodedText text;
  std::vector<data::Document> docs(1);
  std::vector<std::vector<int32_t>> ids;
  while (reader.next(docs[0])) {
    data::encode_documents(l.tokenizer, docs, ids);
    text.add_document(ids[0]);
  }
  if (text.document_count() == 0) LF_FAIL("no text in {}", join(options.text_files));
  const auto unigram = unigram_of_prepared(l);
  evaluate_tokens(l, text, options, batch_size, unigram.get(), report);
  report.has_unigram = unigram != nullptr;
  report.source =
      fmt::format("{} ({} documents, {} tokens)", join(options.text_files), text.document_count(), text.token_count());
  return report;
}

}  // namespace

EvalReport run_eval(const EvalOptions& options) {
  const OpenmpTeam openmp_team(0);  // one thread per CPU, pinned until the evaluation returns
  LF_CHECK(options.batch_size >= 0, "--batch-size must be at least 1, not {}", options.batch_size);
  LF_CHECK(options.max_batches >= 0, "--max-batches must be at least 1, not {}", options.max_batches);
  EvalReport report = evaluate_source(options);
  // A perplexity over no masked token is 1 by convention and says nothing.
  if (report.result.masked == 0)
    LF_FAIL(
        "{}: no token was masked ({} tokens evaluated in {} batches), so there is nothing to evaluate: give more text",
        report.source, report.result.tokens, report.result.batches);
  LF_CHECK(!report.shuffled || report.shuffled->masked == report.result.masked,
           "{}: the shuffled evaluation scored {} targets, the ordered one {}", report.source,
           report.shuffled ? report.shuffled->masked : 0, report.result.masked);
  return report;
}

namespace {

constexpr const char* kMaskMarker = "<mask>";

// The pieces of `text` between the occurrences of `marker` (one more than there are markers).
std::vector<std::string> split_at(const std::string& text, const std::string& marker) {
  std::vector<std::string> pieces;
  for (size_t start = 0;;) {
    const size_t at = text.find(marker, start);
    pieces.push_back(text.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) return pieces;
    start = at + marker.size();
  }
}

// The text with mask m replaced by `token` and the others left as <mask> (a word-start token
// brings its own space).
std::string with_mask_filled(const std::vector<std::string>& pieces, size_t m, const std::string& token) {
  std::string sequence;
  for (size_t i = 0; i < pieces.size(); ++i) {
    sequence += pieces[i];
    if (i + 1 == pieces.size()) break;
    if (i != m) {
      sequence += kMaskMarker;
    } else {
      const bool spaced = !sequence.empty() && sequence.back() == ' ' && !token.empty() && token[0] == ' ';
      sequence += spaced ? token.substr(1) : token;
    }
  }
  return sequence;
}

}  // namespace

std::vector<std::vector<FillMaskPrediction>> fill_mask(const std::string& checkpoint, const std::string& text,
                                                       int top_k) {
  LF_CHECK(top_k >= 1, "--top-k must be at least 1");
  // Encode the text between the masks piece by piece, with <mask> ids in between.
  const std::vector<std::string> pieces = split_at(text, kMaskMarker);
  if (pieces.size() < 2) LF_FAIL("the text has no {} to fill: \"{}\"", kMaskMarker, text);
  Loaded l = load(checkpoint, 1, static_cast<int64_t>(pieces.size()) - 1);
  std::vector<int> ids = {data::kBosId};
  std::vector<size_t> mask_index;
  for (size_t i = 0; i < pieces.size(); ++i) {
    std::string piece = pieces[i];
    while (!piece.empty() && piece.back() == ' ') piece.pop_back();  // a space before <mask> is part of the word
    if (!piece.empty()) l.tokenizer.encode(piece, ids);
    if (i + 1 < pieces.size()) {
      mask_index.push_back(ids.size());
      ids.push_back(data::kMaskId);
    }
  }
  ids.push_back(data::kEosId);
  const int64_t n = l.model->spec().seq_len;
  if (static_cast<int64_t>(ids.size()) > n)
    LF_FAIL("the text is {} tokens long; the model reads at most {}", ids.size(), n);

  const std::vector<int32_t> input(ids.begin(), ids.end());
  const std::vector<int32_t> lengths = {static_cast<int32_t>(ids.size())};
  std::vector<int32_t> positions(mask_index.begin(), mask_index.end());
  const std::vector<int32_t> dummy_targets(positions.size(), data::kMaskId);
  const MlmBatchView batch{1,
                           static_cast<int64_t>(ids.size()),
                           input.data(),
                           lengths.data(),
                           static_cast<int64_t>(positions.size()),
                           positions.data(),
                           dummy_targets.data()};
  l.model->forward(batch, Pass{});
  const auto logits = l.model->logits();
  const int64_t V = logits.size(1);

  std::vector<std::vector<FillMaskPrediction>> out;
  for (size_t m = 0; m < positions.size(); ++m) {
    const float* z = logits.data() + static_cast<int64_t>(m) * V;
    // Softmax over ordinary tokens: special tokens are never a fill.
    const float max = *std::max_element(z + data::kFirstOrdinaryId, z + V);
    double sum = 0;
    for (int64_t j = data::kFirstOrdinaryId; j < V; ++j) sum += std::exp(static_cast<double>(z[j] - max));
    std::vector<int> order(static_cast<size_t>(V - data::kFirstOrdinaryId));
    std::iota(order.begin(), order.end(), data::kFirstOrdinaryId);
    const int k = std::min<int>(top_k, static_cast<int>(order.size()));
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int a, int b) { return z[a] > z[b]; });
    std::vector<FillMaskPrediction> predictions;
    for (int r = 0; r < k; ++r) {
      FillMaskPrediction p;
      p.token_id = order[r];
      p.probability = std::exp(static_cast<double>(z[order[r]] - max)) / sum;
      p.token = l.tokenizer.piece(order[r]);
      if (p.token.rfind("\xE2\x96\x81", 0) == 0) p.token = " " + p.token.substr(3);
      p.sequence = with_mask_filled(pieces, m, p.token);
      predictions.push_back(p);
    }
    out.push_back(predictions);
  }
  return out;
}

}  // namespace linformer

#include "linformer/train/training_data.h"

#include "linformer/core/check.h"
#include "linformer/core/world.h"

#include <fmt/format.h>

#include <filesystem>

namespace linformer {

std::unique_ptr<TrainingData> open_training_data(const config::Recipe& recipe, const std::string& recipe_path) {
  const config::DataConfig& d = recipe.data;
  if (!std::filesystem::exists(std::filesystem::path(d.prepared_dir) / "meta.json"))
    LF_FAIL("no prepared data in '{}': run `linformer prepare --recipe {}` first", d.prepared_dir, recipe_path);
  auto t = std::make_unique<TrainingData>(data::open_prepared(d.prepared_dir));
  const int vocab = t->prepared.tokenizer.vocab_size();
  if (vocab != d.vocab_size)
    LF_FAIL(
        "the prepared data in '{}' has a vocabulary of {}, the recipe says data.vocab_size = {}: run "
        "`linformer prepare --recipe {}` again",
        d.prepared_dir, vocab, d.vocab_size, recipe_path);
  const uint64_t seed = static_cast<uint64_t>(recipe.seed);
  t->train_blocks = std::make_unique<data::TokenBlocks>(t->prepared.train, d.seq_len, d.break_mode);
  t->valid_blocks = std::make_unique<data::TokenBlocks>(t->prepared.valid, d.seq_len, d.break_mode);
  // Before the batchers, whose own checks would name neither the split nor the key.
  if (t->valid_blocks->size() == 0)
    LF_FAIL(
        "the valid split of '{}' is empty (data.valid_fraction = {}): training validates on it; prepare the data "
        "again with a larger data.valid_fraction or a corpus of more documents",
        d.prepared_dir, d.valid_fraction);
  const int ranks = World::size();
  if (t->train_blocks->size() < static_cast<int64_t>(ranks) * recipe.train.batch_size)
    LF_FAIL("the training split of '{}' has {} blocks of {} tokens, fewer than one batch of {} (train.batch_size){}",
            d.prepared_dir, t->train_blocks->size(), d.seq_len, recipe.train.batch_size,
            ranks > 1 ? fmt::format(" on each of {} processes", ranks) : "");
  t->train_masker = std::make_unique<data::Masker>(recipe.masking, vocab, t->prepared.tokenizer.word_starts(), seed);
  // Validation's fixed masks follow data.seed: runs that vary only `seed` are validated on the same masks.
  t->valid_masker = std::make_unique<data::Masker>(data::validation_masking(recipe), vocab,
                                                   t->prepared.tokenizer.word_starts(), config::data_seed(recipe));
  data::BatcherOptions train_options;
  train_options.batch_size = recipe.train.batch_size;
  train_options.seed = seed;
  train_options.rank = World::rank();  // each process its share of every global batch (batcher.h)
  train_options.world_size = ranks;
  t->train = std::make_unique<data::Batcher>(*t->train_blocks, *t->train_masker, train_options);
  t->valid = std::make_unique<data::Batcher>(
      *t->valid_blocks, *t->valid_masker, data::evaluation_options(recipe.train.batch_size, config::data_seed(recipe)));
  t->micro_batches = recipe.train.accumulation;
  if (recipe.train.short_seq_len > 0) {
    const int s = recipe.train.short_seq_len;
    t->short_blocks = std::make_unique<data::TokenBlocks>(t->prepared.train, s, d.break_mode);
    t->short_train = std::make_unique<data::Batcher>(*t->short_blocks, *t->train_masker, train_options);
    t->short_updates = recipe.train.short_seq_updates;
    t->short_micro_batches = recipe.train.accumulation * (d.seq_len / s);
  }
  return t;
}

DataIdentity data_identity(const TrainingData& data, const config::Recipe& recipe) {
  DataIdentity id;
  id.tokenizer_hash = fmt::format("{:016x}", data.prepared.tokenizer.hash());
  id.train_checksum = fmt::format("{:08x}", data.prepared.train.checksum());
  id.train_tokens = data.prepared.train.token_count();
  id.order_keys = {{"seed", std::to_string(recipe.seed)},
                   {"data.seq_len", std::to_string(recipe.data.seq_len)},
                   {"data.break_mode", std::string(config::enum_name(recipe.data.break_mode))},
                   // The sequences of an update on all processes: R processes of batch b read the batches of
                   // one process of R·b (batcher.h), so a run may resume with another number of processes.
                   {"train.batch_size", std::to_string(static_cast<int64_t>(World::size()) * recipe.train.batch_size)},
                   {"train.short_seq_len", std::to_string(recipe.train.short_seq_len)},
                   {"train.short_seq_updates", std::to_string(recipe.train.short_seq_updates)}};
  return id;
}

}  // namespace linformer

#include "linformer/train/mlm_job.h"

#include "linformer/core/world.h"
#include "linformer/data/word_order.h"
#include "linformer/model/batch_adapter.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace linformer {

MlmJob::MlmJob(MlmModel& model, TrainingData& data, const config::Recipe& recipe)
    : model_(model),
      data_(data),
      recipe_(recipe),
      valid_batches_(validation_batch_limit(
          recipe.validation, World::size() * static_cast<int64_t>(recipe.train.batch_size) * recipe.data.seq_len)) {
  const int64_t all = (data_.valid->batches_per_epoch() + World::size() - 1) / World::size();
  if (valid_batches_ > 0 && valid_batches_ < all)
    spdlog::info(
        "validation: the first {} of the valid split's {} batches (validation.max_tokens = {}, "
        "validation.max_batches = {})",
        valid_batches_ * World::size(), data_.valid->batches_per_epoch(), recipe.validation.max_tokens,
        recipe.validation.max_batches);
}

int MlmJob::read_update(int64_t update) {
  if (data_.short_updates > 0 && update == data_.short_updates + 1)
    spdlog::info("sequence-length warm-up done at update {}: blocks of {} tokens from here", data_.short_updates,
                 recipe_.data.seq_len);
  data::Batcher& batches = data_.train_batcher(update);
  micro_.resize(static_cast<size_t>(data_.micro_batches_of(update)));
  for (auto& batch : micro_) batches.next(batch);
  return static_cast<int>(micro_.size());
}

int64_t MlmJob::micro_batch_tokens(int i) const {
  int64_t tokens = 0;
  for (int32_t length : micro_[static_cast<size_t>(i)].lengths) tokens += length;
  return tokens;
}

MicroBatchResult MlmJob::train_micro_batch(int i, const Pass& pass, float grad_scale,
                                           const GradientsFinalFrom& final_from) {
  const StepResult r =
      model_.forward_backward(model_view(micro_[static_cast<size_t>(i)], positions_), pass, grad_scale, final_from);
  return {r.loss_sum, r.masked, r.correct};
}

uint64_t MlmJob::epochs_done(int64_t update) const {
  return update <= data_.short_updates ? 0 : data_.train->state().epoch;
}

int64_t MlmJob::updates_for_epochs(int64_t epochs) const {
  const int64_t batches = epochs * data_.train->batches_per_epoch();
  return data_.short_updates + (batches + data_.micro_batches - 1) / data_.micro_batches;
}

EvalResult MlmJob::evaluate(const std::function<void(data::Batch&)>& rearrange) const {
  EvalResult r = linformer::evaluate(model_, *data_.valid, valid_batches_, &data_.unigram,
                                     {World::rank(), World::size()}, rearrange);
  int64_t counts[4] = {r.masked, r.correct, r.batches, r.tokens};
  World::sum(counts, 4);
  double sums[2] = {r.loss_sum, r.unigram_loss_sum};
  World::sum(sums, 2);
  r.masked = counts[0];
  r.correct = counts[1];
  r.batches = counts[2];
  r.tokens = counts[3];
  r.loss_sum = sums[0];
  r.unigram_loss_sum = sums[1];
  return r;
}

JobValidation MlmJob::validate() {
  const EvalResult r = evaluate();
  JobValidation v;
  v.loss = r.loss();
  v.scores.loss = r.loss();
  v.scores.perplexity = r.perplexity();
  v.scores.accuracy = r.accuracy();
  v.scores.unigram_perplexity = r.unigram_perplexity();
  std::string word_order;
  if (recipe_.validation.shuffle_words) {
    const auto& word_starts = data_.prepared.tokenizer.word_starts();
    const uint64_t seed = config::data_seed(recipe_);
    v.scores.shuffled_perplexity =
        evaluate([&](data::Batch& batch) { data::shuffle_words(batch, word_starts, seed); }).perplexity();
    word_order = fmt::format(" | words shuffled {:.3f} ×", v.scores.shuffled_perplexity / r.perplexity());
  }
  v.log_details = fmt::format("loss {:.4f} | ppl {:.2f} ({:.3f} × unigram {:.2f}) | acc {:.4f} | {} masked tokens{}",
                              r.loss(), r.perplexity(), r.perplexity() / r.unigram_perplexity(), r.unigram_perplexity(),
                              r.accuracy(), r.masked, word_order);
  return v;
}

}  // namespace linformer

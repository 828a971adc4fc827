#include "linformer/train/validator.h"

#include "linformer/core/world.h"
#include "linformer/data/word_order.h"
#include "linformer/optim/lr_schedule.h"
#include "linformer/train/interval_meter.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace linformer {

Validator::Validator(MlmModel& model, TrainingData& data, const config::Recipe& recipe, MetricsLog& metrics)
    : model_(model), data_(data), recipe_(recipe), metrics_(metrics) {}

EvalResult Validator::evaluate(const std::function<void(data::Batch&)>& rearrange) const {
  EvalResult r = linformer::evaluate(model_, *data_.valid, recipe_.validation.max_batches, &data_.unigram,
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

bool Validator::run(TrainingState& state, double elapsed_seconds) {
  last_ = evaluate();
  last_update_ = state.update;
  const bool best = last_.loss() < state.best_valid_loss;
  if (best) {
    state.best_valid_loss = last_.loss();
    state.best_update = state.update;
    state.validations_since_best = 0;
  } else {
    ++state.validations_since_best;
  }
  const double lr = learning_rate(recipe_.optim, recipe_.train.max_updates, std::max<int64_t>(state.update, 1));
  MetricsRow row = validation_row(last_, state, data_.train_batcher(state.update + 1).state().epoch, lr, elapsed_seconds);
  std::string word_order;
  if (recipe_.validation.shuffle_words) {
    const auto& word_starts = data_.prepared.tokenizer.word_starts();
    const uint64_t seed = config::data_seed(recipe_);
    row.shuffled_perplexity =
        evaluate([&](data::Batch& batch) { data::shuffle_words(batch, word_starts, seed); }).perplexity();
    word_order = fmt::format(" | words shuffled {:.3f} ×", row.shuffled_perplexity / row.perplexity);
  }
  metrics_.append(row);
  spdlog::info("valid | update {} | loss {:.4f} | ppl {:.2f} ({:.3f} × unigram {:.2f}) | acc {:.4f} | {} masked tokens{}{}",
               state.update, row.loss, row.perplexity, row.perplexity / row.unigram_perplexity,
               row.unigram_perplexity, row.accuracy, last_.masked, word_order, best ? " | best" : "");
  return best;
}

}  // namespace linformer

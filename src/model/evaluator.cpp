#include "linformer/model/evaluator.h"

#include "linformer/model/batch_adapter.h"

#include <algorithm>

namespace linformer {

EvalResult evaluate(MlmModel& model, data::Batcher& batcher, int64_t max_batches, const data::UnigramModel* unigram,
                    EvalShard shard, const std::function<void(data::Batch&)>& rearrange, const EvalObserver& observe) {
  EvalResult result;
  const int64_t batches =
      max_batches > 0 ? std::min(max_batches * shard.count, batcher.batches_per_epoch()) : batcher.batches_per_epoch();
  data::Batch batch;
  std::vector<int32_t> positions;
  for (int64_t i = shard.index; i < batches; i += shard.count) {
    batcher.get({0, static_cast<uint64_t>(i)}, batch);
    if (batch.targets() == 0) continue;  // nothing to predict in this batch
    if (rearrange) rearrange(batch);
    const StepResult r = model.forward(model_view(batch, positions), Pass{});
    if (observe) observe(batch, model);
    result.loss_sum += r.loss_sum;
    result.masked += r.masked;
    result.correct += r.correct;
    ++result.batches;
    if (unigram)
      for (int32_t id : batch.target_ids) result.unigram_loss_sum += unigram->nll(id);
    for (int32_t length : batch.lengths) result.tokens += length;
  }
  return result;
}

}  // namespace linformer

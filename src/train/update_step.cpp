#include "linformer/train/update_step.h"

#include "linformer/core/check.h"
#include "linformer/core/world.h"
#include "linformer/model/batch_adapter.h"
#include "linformer/optim/lr_schedule.h"

#include <cmath>

namespace linformer {

UpdateStep::UpdateStep(MlmModel& model, AdamW& optimizer, TrainingData& data, const config::Recipe& recipe,
                       bool overlap_allreduce)
    : model_(model), optimizer_(optimizer), data_(data), recipe_(recipe) {
  if (World::distributed())
    gradient_sync_.emplace(model.params(), model.gradients_final_offsets(), overlap_allreduce);
}

UpdateResult UpdateStep::run(TrainingState& state) {
  UpdateResult result;
  int64_t update_masked = 0;
  data::Batcher& batches = data_.train_batcher(state.update + 1);
  micro_.resize(static_cast<size_t>(data_.micro_batches_of(state.update + 1)));
  for (auto& batch : micro_) {
    batches.next(batch);
    update_masked += batch.targets();
  }
  // Data parallel: the loss is the mean over every process's masked tokens, so R processes of
  // batch b make the same update as one process of batch R·b.
  World::sum(&update_masked, 1);
  model_.params().zero_grads();
  const float grad_scale = update_masked > 0 ? 1.0f / static_cast<float>(update_masked) : 0.0f;
  for (auto& batch : micro_) {
    const Pass pass{true, static_cast<uint64_t>(recipe_.seed), static_cast<uint64_t>(state.micro_step++)};
    for (int32_t length : batch.lengths) result.tokens += length;
    if (batch.targets() == 0) continue;
    // The last micro-batch's backward pass starts the gradient sums as gradients become final.
    const bool last = &batch == &micro_.back();
    const StepResult r = model_.forward_backward(model_view(batch, positions_), pass, grad_scale,
                                                 last && gradient_sync_ ? gradient_sync_->listener() : GradientsFinalFrom{});
    result.loss_sum += r.loss_sum;
    result.masked += r.masked;
    result.correct += r.correct;
  }
  if (World::distributed()) {
    // Each process's gradients are its share of the global mean already (scaled by the global
    // count): their sum is the update's gradient, the same on every process.
    result.allreduce_seconds = gradient_sync_->finish();
    int64_t counts[3] = {result.masked, result.correct, result.tokens};  // for the log: the whole update's
    World::sum(counts, 3);
    result.masked = counts[0];
    result.correct = counts[1];
    result.tokens = counts[2];
    World::sum(&result.loss_sum, 1);
  }
  state.tokens += result.tokens;
  result.grad_norm = gradient_norm(model_.params());
  if (!std::isfinite(result.grad_norm))
    LF_FAIL("update {}: the gradient norm is {} (loss diverged); lower optim.lr or resume from an earlier checkpoint",
            state.update + 1, result.grad_norm);
  const double clip = recipe_.optim.clip_norm;
  if (clip > 0 && result.grad_norm > clip) scale_gradients(model_.params(), static_cast<float>(clip / result.grad_norm));
  result.lr = learning_rate(recipe_.optim, recipe_.train.max_updates, state.update + 1);
  optimizer_.step(result.lr);
  ++state.update;
  return result;
}

}  // namespace linformer

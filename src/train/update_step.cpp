#include "linformer/train/update_step.h"

#include "linformer/core/check.h"
#include "linformer/core/world.h"

#include <cmath>

namespace linformer {

UpdateStep::UpdateStep(TrainingJob& job, AdamW& optimizer, const config::Recipe& recipe, const RunSchedule& schedule,
                       bool overlap_allreduce)
    : job_(job), optimizer_(optimizer), recipe_(recipe), schedule_(schedule) {
  if (World::distributed()) gradient_sync_.emplace(job.params(), job.gradients_final_offsets(), overlap_allreduce);
}

UpdateResult UpdateStep::run(TrainingState& state) {
  UpdateResult result;
  const int micro_batches = job_.read_update(state.update + 1);
  int64_t update_units = 0;
  for (int i = 0; i < micro_batches; ++i) update_units += job_.micro_batch_units(i);
  // Data parallel: the loss is the mean over every process's units, so R processes of batch b
  // make the same update as one process of batch R·b.
  World::sum(&update_units, 1);
  job_.params().zero_grads();
  const float grad_scale = update_units > 0 ? 1.0f / static_cast<float>(update_units) : 0.0f;
  for (int i = 0; i < micro_batches; ++i) {
    const Pass pass{true, static_cast<uint64_t>(recipe_.seed), static_cast<uint64_t>(state.micro_step++)};
    result.tokens += job_.micro_batch_tokens(i);
    if (job_.micro_batch_units(i) == 0) continue;
    // The last micro-batch's backward pass starts the gradient sums as gradients become final.
    const bool last = i == micro_batches - 1;
    const MicroBatchResult r = job_.train_micro_batch(
        i, pass, grad_scale, last && gradient_sync_ ? gradient_sync_->listener() : GradientsFinalFrom{});
    result.loss_sum += r.loss_sum;
    result.masked += r.units;
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
  result.grad_norm = gradient_norm(job_.params());
  if (!std::isfinite(result.grad_norm))
    LF_FAIL("update {}: the gradient norm is {} (loss diverged); lower optim.lr or resume from an earlier checkpoint",
            state.update + 1, result.grad_norm);
  const double clip = recipe_.optim.clip_norm;
  if (clip > 0 && result.grad_norm > clip) scale_gradients(job_.params(), static_cast<float>(clip / result.grad_norm));
  result.lr = schedule_.learning_rate(state.update + 1);
  optimizer_.step(result.lr);
  ++state.update;
  return result;
}

}  // namespace linformer

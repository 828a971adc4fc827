#pragma once
// Data parallel: the update's gradients summed over the processes, either in one allreduce after
// the backward pass, or overlapped with it. Overlapped, the gradient arena is cut into buckets at
// the offsets where the backward pass will say gradients are final (MlmModel::
// gradients_final_offsets(): block by block, from the head down), each at least `bucket_bytes`
// (or an eighth of the gradients, if less) but the last. A bucket is queued on a BackgroundSum as
// soon as the backward pass has passed it, the rest when the update's micro-batches are done.
// Every process queues the same buckets in the same order whatever its data, so the collectives
// always match.

#include "linformer/core/background_sum.h"
#include "linformer/model/encoder.h"
#include "linformer/nn/parameters.h"

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

namespace linformer {

class GradientSync {
 public:
  // `final_offsets`: what the backward pass will tell, in its order (ends with 0).
  GradientSync(const Parameters& params, const std::vector<size_t>& final_offsets, bool overlap,
               size_t bucket_bytes = size_t{1} << 20);

  bool overlapping() const { return background_ != nullptr; }
  size_t buckets() const { return buckets_.size(); }
  // For the update's last micro-batch's backward pass (empty when not overlapping).
  GradientsFinalFrom listener();
  // Sums what is not summed yet and waits for every sum: the seconds the caller waited (with
  // overlap, the communication the backward pass did not hide). Then ready for the next update.
  double finish();

 private:
  void queue_through(size_t offset);  // queues every bucket that begins at or after offset

  float* grads_;
  size_t numel_;
  std::vector<std::pair<size_t, size_t>> buckets_;  // [begin, end) in queueing order: begins fall to 0
  size_t queued_ = 0;                               // buckets_[0, queued_) queued this update
  std::unique_ptr<BackgroundSum> background_;
};

}  // namespace linformer

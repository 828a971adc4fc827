#include "linformer/train/gradient_sync.h"

#include "linformer/core/check.h"
#include "linformer/core/world.h"

#include <algorithm>
#include <chrono>

namespace linformer {

GradientSync::GradientSync(const Parameters& params, const std::vector<size_t>& final_offsets, bool overlap,
                           size_t bucket_bytes)
    : grads_(params.grads().data()), numel_(params.grads().numel()) {
  LF_CHECK(!final_offsets.empty() && final_offsets.back() == 0, "the backward pass's final offsets must end with 0");
  // A small model still gets several buckets: at most an eighth of its gradients each.
  const size_t bucket_elements = std::min(bucket_bytes / sizeof(float), numel_ / 8);
  size_t end = numel_;
  for (const size_t offset : final_offsets) {
    LF_CHECK(offset <= end, "the backward pass's final offsets must fall ({} after {})", offset, end);
    if (end - offset >= bucket_elements || offset == 0) {
      buckets_.emplace_back(offset, end);
      end = offset;
    }
  }
  if (overlap) background_ = std::make_unique<BackgroundSum>();
}

GradientsFinalFrom GradientSync::listener() {
  if (!overlapping()) return {};
  return [this](size_t offset) { queue_through(offset); };
}

void GradientSync::queue_through(size_t offset) {
  for (; queued_ < buckets_.size() && buckets_[queued_].first >= offset; ++queued_)
    background_->add(grads_ + buckets_[queued_].first, buckets_[queued_].second - buckets_[queued_].first);
}

double GradientSync::finish() {
  if (overlapping()) {
    queue_through(0);
    queued_ = 0;
    return background_->wait();
  }
  const auto start = std::chrono::steady_clock::now();
  World::sum(grads_, numel_);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace linformer

#include "linformer/core/background_sum.h"

#include "linformer/core/thread_placement.h"
#include "linformer/core/world.h"

#include <chrono>

namespace linformer {

BackgroundSum::BackgroundSum() : thread_([this] { run(); }) {}

BackgroundSum::~BackgroundSum() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void BackgroundSum::add(float* data, size_t count) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back({data, count});
  }
  changed_.notify_all();
}

double BackgroundSum::wait() {
  const auto start = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [this] { return (queue_.empty() && !busy_) || error_; });
  if (error_) std::rethrow_exception(error_);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void BackgroundSum::run() {
  unpin_this_thread();  // started by a pinned main thread: not on that thread's CPU alone
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left
    const Range range = queue_.front();
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    std::exception_ptr error;
    try {
      World::sum(range.data, range.count);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    busy_ = false;
    if (error && !error_) error_ = error;
    changed_.notify_all();
  }
}

}  // namespace linformer

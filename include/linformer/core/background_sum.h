#pragma once
// In-place sums over the processes (World::sum) run on a thread of their own, so that they go on
// while the caller computes: data parallel overlaps the gradient allreduce with the backward pass.
// Between the first add() and wait() the caller makes no MPI call of its own (MPI_THREAD_SERIALIZED
// lets one thread call at a time); every rank queues the same ranges in the same order.

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

namespace linformer {

class BackgroundSum {
 public:
  BackgroundSum();  // starts the thread
  ~BackgroundSum();
  BackgroundSum(const BackgroundSum&) = delete;
  BackgroundSum& operator=(const BackgroundSum&) = delete;

  // Queues the sum of data[0, count) over the processes, in place; data must stay valid until wait().
  void add(float* data, size_t count);
  // Returns once every queued sum is done: the seconds the caller waited.
  double wait();

 private:
  struct Range {
    float* data;
    size_t count;
  };
  void run();

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Range> queue_;
  bool busy_ = false;  // the thread is summing a range it took off the queue
  bool stop_ = false;
  std::exception_ptr error_;  // the first failure, thrown again by wait()
  std::thread thread_;
};

}  // namespace linformer

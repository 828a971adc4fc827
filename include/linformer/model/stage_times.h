#pragma once
// Wall time per stage of a model, summed over the passes since reset (bench train's
// breakdown). Off by default: it adds a clock read per stage.

#include <chrono>
#include <string>
#include <vector>

namespace linformer {

struct StageTimes {
  std::vector<std::string> names;
  std::vector<double> forward_seconds, backward_seconds;
  void reset();
};

class StageTimer {
 public:
  explicit StageTimer(std::vector<std::string> names);
  void enable(bool on) { on_ = on; }
  StageTimes& times() { return times_; }
  const StageTimes& times() const { return times_; }
  // Runs body() and, when on, adds its wall time to the stage's forward or backward seconds.
  template <class Body>
  void forward(size_t stage, Body&& body) {
    timed(times_.forward_seconds, stage, body);
  }
  template <class Body>
  void backward(size_t stage, Body&& body) {
    timed(times_.backward_seconds, stage, body);
  }

 private:
  template <class Body>
  void timed(std::vector<double>& seconds, size_t stage, Body& body) {
    if (!on_) return body();
    const auto start = std::chrono::steady_clock::now();
    body();
    seconds.at(stage) += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  bool on_ = false;
  StageTimes times_;
};

}  // namespace linformer

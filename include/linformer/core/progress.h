#pragma once
// Progress of a long step: a redrawn bar with rate and ETA when stderr is a
// terminal, plain log lines every few seconds otherwise (logs, CI).
//
//   Progress p("encoding", total_bytes, Progress::Unit::bytes);
//   for (...) p.update(done_bytes);
//   p.finish();
//
// Heartbeat covers steps that report nothing (SentencePiece training): it shows
// the elapsed time from a background thread until it is destroyed.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace linformer {

class Progress {
 public:
  enum class Unit { bytes, items };
  // total 0: unknown (no percentage or ETA).
  Progress(std::string label, uint64_t total, Unit unit = Unit::bytes);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Cheap unless it is time to draw (10 times a second on a terminal, every 10 s otherwise).
  void update(uint64_t done);
  // Draws the final state and ends the bar's line.
  void finish();

  // "12.3 MB", "4.5k": the formatting of amounts and rates used in the bar.
  static std::string format_amount(double amount, Unit unit);

 private:
  using Clock = std::chrono::steady_clock;
  void draw(bool final);

  std::string label_;
  uint64_t total_, done_ = 0;
  Unit unit_;
  bool terminal_, finished_ = false;
  Clock::time_point start_, last_draw_;
};

class Heartbeat {
 public:
  explicit Heartbeat(std::string label);
  ~Heartbeat();  // stops the thread and ends the line
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

 private:
  std::string label_;
  bool terminal_;
  std::mutex mutex_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace linformer

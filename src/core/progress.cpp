#include "linformer/core/progress.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>

namespace linformer {

namespace {

constexpr auto kTerminalPeriod = std::chrono::milliseconds(100);
constexpr auto kLogPeriod = std::chrono::seconds(10);

// Bars only make sense when someone watches a terminal at info level.
bool stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1 && spdlog::should_log(spdlog::level::info); }

std::string format_duration(double seconds) {
  const auto s = static_cast<int64_t>(std::llround(seconds));
  return s >= 3600 ? fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
                   : fmt::format("{}:{:02}", s / 60, s % 60);
}

}  // namespace

std::string Progress::format_amount(double amount, Unit unit) {
  if (unit == Unit::bytes) {
    if (amount >= 1e9) return fmt::format("{:.2f} GB", amount / 1e9);
    if (amount >= 1e6) return fmt::format("{:.1f} MB", amount / 1e6);
    if (amount >= 1e3) return fmt::format("{:.1f} kB", amount / 1e3);
    return fmt::format("{:.0f} B", amount);
  }
  if (amount >= 1e6) return fmt::format("{:.2f}M", amount / 1e6);
  if (amount >= 1e3) return fmt::format("{:.1f}k", amount / 1e3);
  return fmt::format("{:.0f}", amount);
}

Progress::Progress(std::string label, uint64_t total, Unit unit)
    : label_(std::move(label)),
      total_(total),
      unit_(unit),
      terminal_(stderr_is_terminal()),
      start_(Clock::now()),
      last_draw_(start_) {}

Progress::~Progress() {
  if (terminal_ && !finished_) std::fputs("\n", stderr);  // leave the partial bar on its own line
}

void Progress::update(uint64_t done) {
  done_ = done;
  const auto now = Clock::now();
  if (now - last_draw_ < (terminal_ ? std::chrono::duration_cast<Clock::duration>(kTerminalPeriod)
                                    : std::chrono::duration_cast<Clock::duration>(kLogPeriod)))
    return;
  last_draw_ = now;
  draw(false);
}

void Progress::finish() {
  if (finished_) return;
  if (total_ > 0) done_ = std::max(done_, total_);
  draw(true);
  finished_ = true;
}

void Progress::draw(bool final) {
  const double seconds = std::chrono::duration<double>(Clock::now() - start_).count();
  const double rate = seconds > 0 ? static_cast<double>(done_) / seconds : 0.0;
  const std::string amount = format_amount(static_cast<double>(done_), unit_);
  const std::string per_second = format_amount(rate, unit_) + "/s";
  std::string text;
  if (total_ > 0) {
    const double fraction = std::min(1.0, static_cast<double>(done_) / static_cast<double>(total_));
    const std::string eta =
        rate > 0 && !final ? " ETA " + format_duration((total_ - std::min(done_, total_)) / rate) : "";
    if (terminal_) {
      constexpr int kWidth = 30;
      const int filled = static_cast<int>(fraction * kWidth);
      text = fmt::format("{} [{}{}] {:3.0f}% {} / {}, {}, {}{}", label_, std::string(filled, '#'),
                         std::string(kWidth - filled, '.'), 100 * fraction, amount,
                         format_amount(static_cast<double>(total_), unit_), per_second, format_duration(seconds), eta);
    } else {
      text = fmt::format("{}: {:.0f}% ({} of {}), {}, {}{}", label_, 100 * fraction, amount,
                         format_amount(static_cast<double>(total_), unit_), per_second, format_duration(seconds), eta);
    }
  } else {
    text = fmt::format("{}: {}, {}, {}", label_, amount, per_second, format_duration(seconds));
  }
  if (terminal_) {
    std::fprintf(stderr, "\r\033[K%s%s", text.c_str(), final ? "\n" : "");
    std::fflush(stderr);
  } else if (!final) {
    spdlog::info("{}", text);
  }
}

Heartbeat::Heartbeat(std::string label) : label_(std::move(label)), terminal_(stderr_is_terminal()) {
  thread_ = std::thread([this] {
    const auto start = std::chrono::steady_clock::now();
    const auto period = terminal_ ? std::chrono::seconds(1) : std::chrono::seconds(30);
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop_cv_.wait_for(lock, period, [this] { return stop_; })) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (terminal_) {
        std::fprintf(stderr, "\r\033[K%s… %s", label_.c_str(), format_duration(s).c_str());
        std::fflush(stderr);
      } else {
        spdlog::info("{}: still running after {}", label_, format_duration(s));
      }
    }
  });
}

Heartbeat::~Heartbeat() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  thread_.join();
  if (terminal_) {
    std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
  }
}

}  // namespace linformer

#include "linformer/core/signals.h"

#include <csignal>

namespace linformer {

namespace {
volatile std::sig_atomic_t g_signal = 0;

void on_signal(int signal) {
  g_signal = signal;
  std::signal(signal, SIG_DFL);  // a second one ends the process
}
}  // namespace

void install_stop_handlers() {
  g_signal = 0;
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
}

bool stop_requested() { return g_signal != 0; }

const char* stop_signal_name() { return g_signal == SIGINT ? "SIGINT" : g_signal == SIGTERM ? "SIGTERM" : ""; }

}  // namespace linformer

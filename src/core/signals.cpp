#include "linformer/core/signals.h"

#include <csignal>
#include <initializer_list>

namespace linformer {

namespace {
volatile std::sig_atomic_t g_signal = 0;

void on_signal(int signal) {
  g_signal = signal;
  std::signal(signal, SIG_DFL);  // a second one ends the process
  // A hang-up closed the terminal: writing to it must not end the run before its checkpoint.
  if (signal == SIGHUP) std::signal(SIGPIPE, SIG_IGN);
}
}  // namespace

void install_stop_handlers() {
  g_signal = 0;
  for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGUSR1}) std::signal(signal, on_signal);
}

bool stop_requested() { return g_signal != 0; }

const char* stop_signal_name() {
  switch (g_signal) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    case SIGUSR1:
      return "SIGUSR1";
    default:
      return "";
  }
}

}  // namespace linformer

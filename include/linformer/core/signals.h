#pragma once
// SIGINT, SIGTERM and SIGHUP (the terminal or SSH session closed) ask a long job to stop at the
// next safe point (after the current update, with a checkpoint) instead of killing it; a second
// signal kills as usual. After SIGHUP, writes to the closed terminal no longer raise SIGPIPE.

namespace linformer {

void install_stop_handlers();
bool stop_requested();
const char* stop_signal_name();  // "SIGINT", "SIGTERM" or "SIGHUP" once one arrived

}  // namespace linformer

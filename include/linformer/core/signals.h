#pragma once
// SIGINT and SIGTERM ask a long job to stop at the next safe point (after the current
// update, with a checkpoint) instead of killing it; a second signal kills as usual.

namespace linformer {

void install_stop_handlers();
bool stop_requested();
const char* stop_signal_name();  // "SIGINT" or "SIGTERM" once one arrived

}  // namespace linformer

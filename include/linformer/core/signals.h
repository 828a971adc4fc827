#pragma once
// SIGINT, SIGTERM, SIGHUP (the terminal or SSH session closed) and SIGUSR1 (what mpirun passes on
// at once without ending the job, and what Slurm's --signal sends before a time limit) ask a long
// job to stop at the next safe point (after the current update, with a checkpoint) instead of
// killing it; a second signal kills as usual. After SIGHUP, writes to the closed terminal no
// longer raise SIGPIPE.

namespace linformer {

void install_stop_handlers();
bool stop_requested();
const char* stop_signal_name();  // "SIGINT", "SIGTERM", "SIGHUP" or "SIGUSR1" once one arrived

}  // namespace linformer

#include "linformer/core/openmp_wait.h"

#include <sys/prctl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace linformer {

namespace {
// Set beside GOMP_SPINCOUNT by the re-execution, so the description can say the program chose it.
constexpr const char* kChosenByProgram = "LINFORMER_SET_GOMP_SPINCOUNT";
}  // namespace

void bound_openmp_spinning(char** argv) {
  if (std::getenv(kChosenByProgram) != nullptr) {
    // Re-executed through /proc/self/exe, whose name "exe" became the process name: give back
    // argv[0]'s, which ps, top, pgrep and killall show.
    const std::string name = std::filesystem::path(argv[0]).filename().string();
    prctl(PR_SET_NAME, name.c_str());
    return;
  }
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
  const std::string spin = std::to_string(kOpenmpSpinCount);
  setenv("GOMP_SPINCOUNT", spin.c_str(), 1);
  setenv(kChosenByProgram, "1", 1);
  execv("/proc/self/exe", argv);
  // Not re-executed (no /proc, say): run on with the runtime's default, and say so.
  unsetenv("GOMP_SPINCOUNT");
  unsetenv(kChosenByProgram);
}

const char* openmp_wait_policy_description() {
  static const std::string text = [] {
    const char* policy = std::getenv("OMP_WAIT_POLICY");
    const char* spin = std::getenv("GOMP_SPINCOUNT");
    if (spin != nullptr && std::getenv(kChosenByProgram) != nullptr)
      return "GOMP_SPINCOUNT=" + std::string(spin) + " (the program's default: idle threads sleep soon, "
             "so a busy neighbour process costs little; set OMP_WAIT_POLICY or GOMP_SPINCOUNT to choose)";
    std::string chosen;
    if (policy != nullptr) chosen += "OMP_WAIT_POLICY=" + std::string(policy);
    if (spin != nullptr) chosen += (chosen.empty() ? "" : ", ") + std::string("GOMP_SPINCOUNT=") + spin;
    if (!chosen.empty()) return chosen + " (set by the environment)";
    return std::string("the OpenMP runtime's default (neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT set)");
  }();
  return text.c_str();
}

}  // namespace linformer

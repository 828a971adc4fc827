#include "linformer/core/openmp_wait.h"

#include "linformer/core/thread_placement.h"

#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>

namespace linformer {

namespace {
// Set beside the policy by the re-execution, so the description can say the program chose it:
// "1" for the spin count, kChoseBusy for passive waiting beside a busy process.
constexpr const char* kChosenByProgram = "LINFORMER_SET_GOMP_SPINCOUNT";
constexpr const char* kChoseBusy = "busy";

// cpuN's jiffies from a /proc/stat text: {busy, total}; idle and iowait are not busy.
std::map<int, std::pair<uint64_t, uint64_t>> cpu_jiffies(const std::string& stat) {
  std::map<int, std::pair<uint64_t, uint64_t>> jiffies;
  std::istringstream lines(stat);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("cpu", 0) != 0 || line.size() < 4 || !std::isdigit(static_cast<unsigned char>(line[3]))) continue;
    std::istringstream fields(line.substr(3));
    int cpu = 0;
    fields >> cpu;
    uint64_t value = 0, total = 0, idle = 0;
    for (int field = 0; field < 8 && fields >> value; ++field) {  // user nice system idle iowait irq softirq steal
      total += value;
      if (field == 3 || field == 4) idle += value;
    }
    jiffies[cpu] = {total - idle, total};
  }
  return jiffies;
}

std::string read_proc_stat() {
  std::ifstream in("/proc/stat");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The commands that run parallel work long enough for the waiting policy to matter.
bool computes(char** argv) {
  static const std::set<std::string> commands = {"train", "finetune", "bench", "eval", "classify", "fill-mask"};
  for (int i = 1; argv[i] != nullptr; ++i)
    if (commands.count(argv[i]) != 0) return true;
  return false;
}

// Whether other processes keep at least kBusyCpus of the CPUs this process may use busy, over
// kBusySampleMs (this process sleeps meanwhile, so the busy time is theirs).
bool cpus_busy_now() {
  const std::vector<int>& cpus = process_cpus();
  if (cpus.empty()) return false;
  const std::string before = read_proc_stat();
  if (before.empty()) return false;
  std::this_thread::sleep_for(std::chrono::milliseconds(kBusySampleMs));
  return busy_cpus_between(before, read_proc_stat(), cpus) >= kBusyCpus;
}
}  // namespace

double busy_cpus_between(const std::string& stat_before, const std::string& stat_after, const std::vector<int>& cpus) {
  const auto before = cpu_jiffies(stat_before), after = cpu_jiffies(stat_after);
  double busy = 0;
  for (const int cpu : cpus) {
    const auto b = before.find(cpu), a = after.find(cpu);
    if (b == before.end() || a == after.end() || a->second.second <= b->second.second) continue;
    const double busy_jiffies = static_cast<double>(a->second.first - std::min(a->second.first, b->second.first));
    busy += std::min(1.0, busy_jiffies / static_cast<double>(a->second.second - b->second.second));
  }
  return busy;
}

void bound_openmp_spinning(char** argv) {
  if (std::getenv(kChosenByProgram) != nullptr) {
    // Re-executed through /proc/self/exe, whose name "exe" became the process name: give back
    // argv[0]'s, which ps, top, pgrep and killall show.
    const std::string name = std::filesystem::path(argv[0]).filename().string();
    prctl(PR_SET_NAME, name.c_str());
    return;
  }
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
  // With OMP_PROC_BIND, OMP_PLACES or GOMP_CPU_AFFINITY set, the OpenMP runtime pinned the main
  // thread to the first place when it loaded, and the re-executed program would inherit that one
  // CPU (and run one thread): the user's placement runs with the runtime's own waiting.
  if (environment_places_openmp_threads()) return;
  if (computes(argv) && cpus_busy_now()) {
    setenv("OMP_WAIT_POLICY", "passive", 1);
    setenv(kChosenByProgram, kChoseBusy, 1);
  } else {
    setenv("GOMP_SPINCOUNT", std::to_string(kOpenmpSpinCount).c_str(), 1);
    setenv(kChosenByProgram, "1", 1);
  }
  execv("/proc/self/exe", argv);
  // Not re-executed (no /proc, say): run on with the runtime's default, and say so.
  unsetenv("OMP_WAIT_POLICY");
  unsetenv("GOMP_SPINCOUNT");
  unsetenv(kChosenByProgram);
}

const char* openmp_wait_policy_description() {
  static const std::string text = [] {
    const char* policy = std::getenv("OMP_WAIT_POLICY");
    const char* spin = std::getenv("GOMP_SPINCOUNT");
    const char* chosen_by_program = std::getenv(kChosenByProgram);
    if (policy != nullptr && chosen_by_program != nullptr && std::string(chosen_by_program) == kChoseBusy)
      return "OMP_WAIT_POLICY=" + std::string(policy) +
             " (the program's choice: other processes kept the CPUs "
             "busy at start, where spinning threads burn the time their descheduled partner needs; set "
             "OMP_WAIT_POLICY or GOMP_SPINCOUNT to choose)";
    if (spin != nullptr && chosen_by_program != nullptr)
      return "GOMP_SPINCOUNT=" + std::string(spin) +
             " (the program's default: idle threads sleep soon, "
             "so a busy neighbour process costs little; set OMP_WAIT_POLICY or GOMP_SPINCOUNT to choose)";
    std::string chosen;
    if (policy != nullptr) chosen += "OMP_WAIT_POLICY=" + std::string(policy);
    if (spin != nullptr) chosen += (chosen.empty() ? "" : ", ") + std::string("GOMP_SPINCOUNT=") + spin;
    if (!chosen.empty()) return chosen + " (set by the environment)";
    if (environment_places_openmp_threads())
      return std::string(
          "the OpenMP runtime's default (OMP_PROC_BIND, OMP_PLACES or GOMP_CPU_AFFINITY set: the "
          "program leaves OpenMP to the environment)");
    return std::string("the OpenMP runtime's default (neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT set)");
  }();
  return text.c_str();
}

}  // namespace linformer

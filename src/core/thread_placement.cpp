#include "linformer/core/thread_placement.h"

#include <fmt/format.h>
#include <omp.h>
#include <sched.h>
#include <strings.h>

#include <cstdlib>
#include <mutex>

namespace linformer {

namespace {
struct ProcessCpus {
  cpu_set_t mask;         // the affinity before any pinning
  std::vector<int> list;  // the CPUs in it, ascending
};

const ProcessCpus& process_cpu_state() {
  static const ProcessCpus state = [] {
    ProcessCpus s;
    CPU_ZERO(&s.mask);
    if (sched_getaffinity(0, sizeof s.mask, &s.mask) != 0) return s;  // unknown: an empty list, never pinned
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
      if (CPU_ISSET(cpu, &s.mask)) s.list.push_back(cpu);
    return s;
  }();
  return state;
}

// Passive waiting: a thread sleeps at every barrier, and the busy neighbour moves to its CPU
// meanwhile; pinned, the woken thread must wait for that CPU while the other one may be free. The
// default recipe's run started beside a busy process (where the program waits passively) took
// 145 s pinned against 110 s unpinned (results/2026-11-27_zen4_thread_pinning/).
bool waits_passively() {
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  return policy != nullptr && strcasecmp(policy, "passive") == 0;
}

std::mutex placement_mutex;
std::string placement = "not set by the program";  // guarded by placement_mutex
int pinned_threads = 0;  // threads of the team pinned now (0: none); guarded by placement_mutex
int open_scopes = 0;     // OpenmpTeam objects alive; guarded by placement_mutex

std::string threads_text(int team) { return std::to_string(team) + (team == 1 ? " thread" : " threads"); }

std::string cpu_list(const std::vector<int>& cpus) {
  std::string text;
  for (const int cpu : cpus) text += (text.empty() ? "" : ", ") + std::to_string(cpu);
  return text;
}

// Each thread of a team of `team` sets its own affinity (0: the calling thread): to the CPU of
// its number, or back to every CPU. libgomp keeps a team's threads from one region to the next,
// so the placement holds for the regions that follow.
void place_team(int team, bool pin) {
  const std::vector<int>& cpus = process_cpus();
#pragma omp parallel num_threads(team)
  {
    if (pin) {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpus[static_cast<size_t>(omp_get_thread_num())], &one);
      sched_setaffinity(0, sizeof one, &one);
    } else {
      unpin_this_thread();
    }
  }
}
}  // namespace

const std::vector<int>& process_cpus() { return process_cpu_state().list; }

bool environment_places_openmp_threads() {
  for (const char* name : {"OMP_PROC_BIND", "OMP_PLACES", "GOMP_CPU_AFFINITY"})
    if (std::getenv(name) != nullptr) return true;
  return false;
}

void unpin_this_thread() {
  const ProcessCpus& s = process_cpu_state();
  if (!s.list.empty()) sched_setaffinity(0, sizeof s.mask, &s.mask);
}

OpenmpTeam::OpenmpTeam(int threads) {
  const std::vector<int>& cpus = process_cpus();  // first: read before anything is pinned
  if (threads > 0) omp_set_num_threads(threads);
  const int team = omp_get_max_threads();
  const std::lock_guard<std::mutex> lock(placement_mutex);
  if (open_scopes++ > 0) return;  // inside another command's scope: that one placed the threads
  const bool by_environment = environment_places_openmp_threads();
  const bool passive = waits_passively();
  const bool pin = !by_environment && !passive && team >= 2 && static_cast<size_t>(team) == cpus.size();
  if (pin) {
    place_team(team, true);
    pinned_threads = team;
  }
  if (by_environment)
    placement = fmt::format(
        "{}, placed as OMP_PROC_BIND, OMP_PLACES or GOMP_CPU_AFFINITY say (set by the "
        "environment)",
        threads_text(team));
  else if (pin)
    placement = fmt::format("{}, pinned one per CPU (CPUs {}; OMP_PROC_BIND=false leaves them to the kernel)",
                            threads_text(team), cpu_list(cpus));
  else if (passive)
    placement = fmt::format("{} on {} CPU{}, placed by the kernel (waiting passively: pinned only when threads spin)",
                            threads_text(team), cpus.size(), cpus.size() == 1 ? "" : "s");
  else
    placement = fmt::format("{} on {} CPU{}, placed by the kernel (pinned only with one thread per CPU)",
                            threads_text(team), cpus.size(), cpus.size() == 1 ? "" : "s");
}

OpenmpTeam::~OpenmpTeam() {
  const std::lock_guard<std::mutex> lock(placement_mutex);
  if (--open_scopes > 0 || pinned_threads == 0) return;
  place_team(pinned_threads, false);
  pinned_threads = 0;
}

std::string openmp_thread_placement() {
  const std::lock_guard<std::mutex> lock(placement_mutex);
  return placement;
}

}  // namespace linformer

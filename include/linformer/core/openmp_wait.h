#pragma once
// How long idle OpenMP threads spin before they sleep. GCC's OpenMP runtime spins a waiting
// thread for up to 300,000 iterations (about a millisecond) by default: on an idle machine that
// saves a wake-up, but beside another busy process a spinning thread burns the time slice its
// descheduled partner needs, and a 2-thread run fell to a third of its idle speed. A spin count of
// 5,000 (microseconds) keeps the idle speed and gave 44-45% of it beside one CPU-bound process on
// the base recipe (fair share: 50%; 10,000 gave 36-41% on a Zen 4 EPYC). Lower counts give more
// there (1,000: 49-52%) but let a tiny model's threads fall asleep between its short parallel
// regions: beside a busy process 3,000 and 1,000 ran the CI's tiny model at 7-26% of its idle
// speed, 5,000 and 10,000 at 98-100%. OMP_WAIT_POLICY=passive gave 50-60% on the base recipe but
// cost 5% idle there and 6× on tiny models (results/2026-11-25_shared_cpu/,
// results/2026-11-27_zen4_shared_cpu/).
//
// The runtime reads its environment once, when it is loaded, so the bound must be in the
// environment before the program starts: bound_openmp_spinning() puts it there and re-executes
// the program once, unless the user chose a policy (OMP_WAIT_POLICY or GOMP_SPINCOUNT set) or
// places the threads (OMP_PROC_BIND, OMP_PLACES or GOMP_CPU_AFFINITY set: the runtime pinned the
// main thread to its first place when it loaded, and a re-executed program would inherit it).

#include <string>
#include <vector>

namespace linformer {

inline constexpr long kOpenmpSpinCount = 5000;

// Another process busy on this process's CPUs when a long job starts: no spin count then serves
// every model (the default recipe's training run kept 30% of its idle throughput at 5,000, the
// tiny model fell to 7-26% below it), while passive waiting kept 54% and 38-50%; idle, passive
// costs 28% on the default recipe and 6× on tiny models. So commands that compute (train,
// finetune, bench, eval, classify, fill-mask) look at the CPUs for kBusySampleMs first and wait
// passively when others keep at least kBusyCpus of them busy (results/2026-11-27_zen4_shared_cpu/).
inline constexpr int kBusySampleMs = 100;
inline constexpr double kBusyCpus = 0.5;

// CPUs' worth of time the given CPUs spent busy between two readings of /proc/stat (the text of
// the file): Σ over those CPUs of (non-idle jiffies) / (all jiffies) in the interval. Lines of
// other CPUs are ignored; a CPU missing from either reading counts as idle.
double busy_cpus_between(const std::string& stat_before, const std::string& stat_after, const std::vector<int>& cpus);

// Call first thing in main(). Returns normally when the environment already holds a policy or a
// placement; else re-executes /proc/self/exe with GOMP_SPINCOUNT set, or OMP_WAIT_POLICY=passive
// for a computing command started beside a busy process (and returns if that fails: the program
// then runs with the runtime's default).
void bound_openmp_spinning(char** argv);

// One line for --version and the run log: the wait policy in effect and who chose it.
const char* openmp_wait_policy_description();

}  // namespace linformer

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
// the program once, unless the user chose a policy (OMP_WAIT_POLICY or GOMP_SPINCOUNT set).

namespace linformer {

inline constexpr long kOpenmpSpinCount = 5000;

// Call first thing in main(). Returns normally when the environment already holds a policy; else
// re-executes /proc/self/exe with GOMP_SPINCOUNT set (and returns if that fails: the program then
// runs with the runtime's default).
void bound_openmp_spinning(char** argv);

// One line for --version and the run log: the wait policy in effect and who chose it.
const char* openmp_wait_policy_description();

}  // namespace linformer

#pragma once
// How long idle OpenMP threads spin before they sleep. GCC's OpenMP runtime spins a waiting
// thread for up to 300,000 iterations (about a millisecond) by default: on an idle machine that
// saves a wake-up, but beside another busy process a spinning thread burns the time slice its
// descheduled partner needs, and a 2-thread run fell to a third of its idle speed. A spin count of
// 10,000 (tens of microseconds) kept the idle speed and gave 41% of it beside one CPU-bound
// process (fair share: 50%); OMP_WAIT_POLICY=passive gave 50% there but cost 5% idle on the
// default recipe and 6× on tiny models (results/shared_cpu/).
//
// The runtime reads its environment once, when it is loaded, so the bound must be in the
// environment before the program starts: bound_openmp_spinning() puts it there and re-executes
// the program once, unless the user chose a policy (OMP_WAIT_POLICY or GOMP_SPINCOUNT set).

namespace linformer {

inline constexpr long kOpenmpSpinCount = 10000;

// Call first thing in main(). Returns normally when the environment already holds a policy; else
// re-executes /proc/self/exe with GOMP_SPINCOUNT set (and returns if that fails: the program then
// runs with the runtime's default).
void bound_openmp_spinning(char** argv);

// One line for --version and the run log: the wait policy in effect and who chose it.
const char* openmp_wait_policy_description();

}  // namespace linformer

#include "linformer/core/thread_placement.h"

#include "test_util.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <omp.h>
#include <sched.h>

#include <cstdlib>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

namespace linformer {
namespace {

using ::testing::HasSubstr;

// The CPUs the calling thread may run on.
std::vector<int> this_thread_cpus() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  EXPECT_EQ(sched_getaffinity(0, sizeof mask, &mask), 0);
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &mask)) cpus.push_back(cpu);
  return cpus;
}

// Each thread's CPUs in a team of `team` threads, by thread number.
std::vector<std::vector<int>> team_cpus(int team) {
  std::vector<std::vector<int>> cpus(static_cast<size_t>(team));
#pragma omp parallel num_threads(team)
  cpus[static_cast<size_t>(omp_get_thread_num())] = this_thread_cpus();
  return cpus;
}

// Unsets the placement and waiting variables for the test and puts them back after.
class NoPlacementEnvironment {
 public:
  NoPlacementEnvironment() {
    for (const char* name : kNames) {
      const char* value = std::getenv(name);
      saved_.emplace_back(value ? std::optional<std::string>(value) : std::nullopt);
      unsetenv(name);
    }
  }
  ~NoPlacementEnvironment() {
    for (size_t i = 0; i < saved_.size(); ++i)
      if (saved_[i])
        setenv(kNames[i], saved_[i]->c_str(), 1);
      else
        unsetenv(kNames[i]);
  }

 private:
  static constexpr const char* kNames[] = {"OMP_PROC_BIND", "OMP_PLACES", "GOMP_CPU_AFFINITY", "OMP_WAIT_POLICY"};
  std::vector<std::optional<std::string>> saved_;
};

// One thread per CPU: while an OpenmpTeam lives, thread i runs on the i-th CPU alone, and a
// process started meanwhile from the main thread would inherit its one CPU; after it, and with
// another count, passive waiting or the user's OMP_PROC_BIND, every thread runs anywhere.
TEST(ThreadPlacement, PinsOneThreadPerCpuWhileATeamLivesOnlyThen) {
  const std::vector<int> cpus = process_cpus();
  if (cpus.size() < 2) GTEST_SKIP() << "this process may use " << cpus.size() << " CPU: nothing to pin";
  EXPECT_EQ(cpus, this_thread_cpus());
  const NoPlacementEnvironment no_placement;
  const int n = static_cast<int>(cpus.size());
  auto all_threads_anywhere = [&](const char* when) {
    for (const auto& thread : team_cpus(n)) EXPECT_EQ(thread, cpus) << when;
  };
  {
    const OpenmpTeam team(n);
    EXPECT_THAT(openmp_thread_placement(), HasSubstr("pinned one per CPU"));
    const auto pinned = team_cpus(n);
    for (int i = 0; i < n; ++i)
      EXPECT_EQ(pinned[static_cast<size_t>(i)], std::vector<int>{cpus[static_cast<size_t>(i)]}) << "thread " << i;
    EXPECT_EQ(testing::run_command("nproc").output, "1\n");  // what a process started now would get
    {
      const OpenmpTeam nested(n);  // a command inside another: the outer one's placement holds
    }
    EXPECT_EQ(team_cpus(n), pinned);
  }
  all_threads_anywhere("after the team");
  EXPECT_EQ(testing::run_command("nproc").output, std::to_string(n) + "\n");
  {
    const OpenmpTeam team(n - 1);  // fewer threads than CPUs
    EXPECT_THAT(openmp_thread_placement(), HasSubstr("placed by the kernel"));
    all_threads_anywhere("fewer threads than CPUs");
  }
  setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
  {
    const OpenmpTeam team(n);
    EXPECT_THAT(openmp_thread_placement(), HasSubstr("waiting passively"));
    all_threads_anywhere("passive waiting");
  }
  unsetenv("OMP_WAIT_POLICY");
  setenv("OMP_PROC_BIND", "false", 1);
  {
    const OpenmpTeam team(n);
    EXPECT_THAT(openmp_thread_placement(), HasSubstr("set by the environment"));
    all_threads_anywhere("OMP_PROC_BIND set");
  }
}

// A thread started while the team is pinned inherits the main thread's one CPU; threads that work
// beside the team (the data-parallel sums) unpin themselves.
TEST(ThreadPlacement, UnpinThisThreadGivesBackEveryCpu) {
  const std::vector<int> cpus = process_cpus();
  if (cpus.size() < 2) GTEST_SKIP() << "this process may use " << cpus.size() << " CPU: nothing to pin";
  const NoPlacementEnvironment no_placement;
  const OpenmpTeam team(static_cast<int>(cpus.size()));
  EXPECT_EQ(this_thread_cpus(), std::vector<int>{cpus[0]});
  std::vector<int> before, after;
  std::thread helper([&] {
    before = this_thread_cpus();
    unpin_this_thread();
    after = this_thread_cpus();
  });
  helper.join();
  EXPECT_EQ(before, std::vector<int>{cpus[0]});
  EXPECT_EQ(after, cpus);
}

// With OMP_PROC_BIND set, the OpenMP runtime pins the main thread to its first place when it
// loads, so a program that re-executed itself would run on that one CPU: the program leaves the
// environment's placement alone (no re-execution) and runs as many threads as the runtime's own
// placement gives when nothing re-executes (the spin count set). In the GCC build that is every
// CPU; the clang build also loads oneDNN's libgomp beside LLVM's runtime, which then sees only
// the CPU libgomp bound.
TEST(ThreadPlacement, TheUsersOmpProcBindRunsAsTheRuntimePlacesIt) {
  if (process_cpus().size() < 2) GTEST_SKIP() << "this process may use 1 CPU";
  const std::string version = std::string("'") + LINFORMER_BINARY + "' --version";
  const std::string clean =
      "env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u OMP_NUM_THREADS -u OMP_PLACES -u GOMP_CPU_AFFINITY ";
  auto threads = [&](const std::string& env) {
    const auto r = testing::run_command(clean + env + " " + version);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    std::smatch m;
    EXPECT_TRUE(std::regex_search(r.output, m, std::regex("OpenMP threads available: (\\d+)"))) << r.output;
    return std::make_pair(m.size() > 1 ? std::stoi(m[1].str()) : -1, r.output);
  };
  EXPECT_EQ(threads("").first, static_cast<int>(process_cpus().size()));
  const auto bound = threads("OMP_PROC_BIND=true");
  EXPECT_EQ(bound.first, threads("OMP_PROC_BIND=true GOMP_SPINCOUNT=5000").first);
  EXPECT_THAT(bound.second, HasSubstr("OpenMP waiting: the OpenMP runtime's default (OMP_PROC_BIND, OMP_PLACES or "
                                      "GOMP_CPU_AFFINITY set"));
}

}  // namespace
}  // namespace linformer

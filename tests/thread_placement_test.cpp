#include "linformer/core/thread_placement.h"

#include "test_util.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <omp.h>
#include <sched.h>

#include <cstdlib>
#include <optional>
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
      if (saved_[i]) setenv(kNames[i], saved_[i]->c_str(), 1);
      else unsetenv(kNames[i]);
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

// With OMP_PROC_BIND set, the OpenMP runtime pins the first process to one place before the
// program re-executes itself (core/openmp_wait.h); the re-executed program must still see every CPU.
TEST(ThreadPlacement, TheUsersOmpProcBindKeepsEveryCpuThroughTheReexecution) {
  if (process_cpus().size() < 2) GTEST_SKIP() << "this process may use 1 CPU";
  const std::string binary = std::string("'") + LINFORMER_BINARY + "' --version";
  const auto plain = testing::run_command("env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u OMP_NUM_THREADS " + binary);
  const auto bound =
      testing::run_command("env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u OMP_NUM_THREADS OMP_PROC_BIND=true " + binary);
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  ASSERT_EQ(bound.exit_code, 0) << bound.output;
  const std::string expected = "OpenMP threads available: " + std::to_string(process_cpus().size()) + "\n";
  EXPECT_THAT(plain.output, HasSubstr(expected));
  EXPECT_THAT(bound.output, HasSubstr(expected));
}

}  // namespace
}  // namespace linformer

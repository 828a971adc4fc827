#pragma once
// Where the OpenMP threads of a computing command run. Left to the kernel, the two threads of a
// 2-thread team on a 2-core machine may share one core while a busy neighbour process holds the
// other: then the thread that ends its half of a parallel region first spins or sleeps while its
// partner waits for a time slice, on every region. Pinned one per core, each thread keeps a core
// to itself or shares it with the neighbour alone: the default recipe's training run beside a
// `yes` started after it kept 45-47% of its idle throughput pinned against 30% unpinned, and two
// tiny models on the same two cores 69-92% each against 2%, idle at the same speed
// (results/2026-11-27_zen4_thread_pinning/).
//
// Pinning applies only with exactly one thread per CPU this process may use (threads = 0, the
// default, gives that): with fewer threads, pinned processes would pile onto the first CPUs. And
// only while threads spin: with OMP_WAIT_POLICY=passive (the program's choice when it starts on
// busy CPUs) a pinned thread woken on a CPU the neighbour took waits for it, though the other
// may be free.
//
// The user's OMP_PROC_BIND, OMP_PLACES or GOMP_CPU_AFFINITY (OMP_PROC_BIND=false to turn it off)
// take precedence: the program then pins nothing. Pinning changes no number: the same threads
// split the same work.

#include <string>
#include <vector>

namespace linformer {

// A computing command's OpenMP team, for as long as the object lives: sets the thread count
// (threads > 0; 0 keeps the OpenMP default, one per CPU this process may use) and pins thread i
// of the team to the i-th of those CPUs when there is one thread per CPU, threads spin and the
// environment places none. The destructor lets every thread run anywhere again, so that whoever
// goes on in this process (a test, a program using the library) and the processes it starts get
// every CPU back: a process started from a pinned thread inherits its one CPU, and one OpenMP
// thread. Within another command's scope it changes only the thread count. Create it at the
// start of the command, before its parallel work.
class OpenmpTeam {
 public:
  explicit OpenmpTeam(int threads);
  ~OpenmpTeam();
  OpenmpTeam(const OpenmpTeam&) = delete;
  OpenmpTeam& operator=(const OpenmpTeam&) = delete;
};

// Whether the user placed OpenMP threads: OMP_PROC_BIND, OMP_PLACES or GOMP_CPU_AFFINITY set.
bool environment_places_openmp_threads();

// The CPUs this process may use (its affinity when first asked, before any pinning), ascending.
const std::vector<int>& process_cpus();

// Lets the calling thread run on every CPU of process_cpus() again: for threads or child
// processes started after pinning, which inherit the pinned main thread's single CPU but should
// not compete with the OpenMP thread pinned there. Once process_cpus() has been read (an
// OpenmpTeam reads it first), it makes no allocation: safe in a child after fork().
void unpin_this_thread();

// How the last OpenmpTeam placed the threads, for the run log and the benchmarks, e.g.
// "2 threads, pinned one per CPU (CPUs 0, 1)".
std::string openmp_thread_placement();

}  // namespace linformer

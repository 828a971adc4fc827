#pragma once
// The processes of one run. Launched by `mpirun -np R` (and built with Open MPI), a run is R
// processes, the ranks 0 … R−1, that train one model by synchronous data parallelism; launched
// plainly, it is one process and nothing here calls MPI (no launcher needed).
//
// Every collective must be called by every rank in the same order, by one thread at a time
// (MPI_THREAD_SERIALIZED: another thread may call while the main thread makes no MPI call, see
// BackgroundSum). A rank that fails calls abort_all(): MPI then ends every rank, so none waits
// forever for a partner that is gone.

#include <cstddef>
#include <cstdint>
#include <string>

namespace linformer {

class World {
 public:
  // Call once in main(), before anything else uses it: joins the MPI job when launched by
  // mpirun (MPI_Init_thread), else a world of one. Fails when launched by mpirun in a build
  // without MPI.
  static void init();
  // Leaves the MPI job (MPI_Finalize): call once at the normal end of main().
  static void finalize();

  static int rank();
  static int size();
  static bool is_root() { return rank() == 0; }
  static bool distributed() { return size() > 1; }
  // "1 process" or "2 processes (Open MPI …)" for the log.
  static std::string description();
  // For --version: "MPI (Open MPI v4.1.4)" or "off (built without MPI)".
  static std::string build_description();
  // MPI lets a thread other than the main one make the calls (MPI_THREAD_SERIALIZED granted).
  static bool other_threads_may_call();
  // The processes run on more than one machine (not all share memory with rank 0's).
  static bool spans_several_machines();

  // In place: every rank ends with the sum over ranks. No-ops in a world of one.
  static void sum(float* data, size_t count);
  static void sum(double* data, size_t count);
  static void sum(int64_t* data, size_t count);
  // True on every rank when `flag` is true on any.
  static bool any(bool flag);
  static void barrier();
  // Ends every rank of the job with `code` (exit(code) in a world of one).
  [[noreturn]] static void abort_all(int code);

  // A collective that has waited `seconds` for the other processes (one hung, or died without
  // mpirun noticing) ends this process with an error naming the rank and the call; mpirun then
  // ends the job. A watchdog thread checks; 0 turns it off. Data-parallel runs only.
  static void set_peer_timeout(double seconds);
};

}  // namespace linformer

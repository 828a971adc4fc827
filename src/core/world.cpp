#include "linformer/core/world.h"

#include "linformer/core/check.h"

#include <fmt/format.h>

#ifdef LINFORMER_HAVE_MPI
#include <mpi.h>
#endif

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

namespace linformer {

namespace {
int g_rank = 0;
int g_size = 1;
bool g_mpi = false;         // MPI_Init_thread was called (and MPI_Finalize not yet)
bool g_serialized = false;  // MPI_THREAD_SERIALIZED (or more) granted
int g_machines = 1;         // how many shared-memory nodes the processes run on

// The watchdog of set_peer_timeout(): when the running collective started (steady-clock ns; 0: none).
std::atomic<int64_t> g_collective_since{0};
std::atomic<const char*> g_collective_name{""};
std::atomic<bool> g_watchdog_stop{false};
std::thread g_watchdog;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Marks the enclosing collective for the watchdog.
class CollectiveWait {
 public:
  explicit CollectiveWait(const char* name) {
    g_collective_name.store(name);
    g_collective_since.store(now_ns());
  }
  ~CollectiveWait() { g_collective_since.store(0); }
  CollectiveWait(const CollectiveWait&) = delete;
  CollectiveWait& operator=(const CollectiveWait&) = delete;
};

// Launched by Open MPI's mpirun (or another launcher setting its variables)?
bool launched_by_mpirun() { return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr; }

#ifdef LINFORMER_HAVE_MPI
void check_mpi(int code, const char* what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  LF_FAIL("rank {} of {}: {} failed: {}", g_rank, g_size, what, std::string(text, static_cast<size_t>(length)));
}

template <typename T>
void sum_in_place(T* data, size_t count, MPI_Datatype type) {
  if (!g_mpi || g_size == 1 || count == 0) return;
  // MPI counts are int: large buffers go in pieces.
  constexpr size_t kPiece = size_t{1} << 30;
  const CollectiveWait wait("MPI_Allreduce");
  for (size_t done = 0; done < count; done += kPiece) {
    const int n = static_cast<int>(std::min(kPiece, count - done));
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, data + done, n, type, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
  }
}
#endif
}  // namespace

void World::init() {
  if (!launched_by_mpirun()) return;
#ifdef LINFORMER_HAVE_MPI
  int provided = 0;
  // One thread at a time calls MPI: the main thread, or the gradient sum's thread while the main
  // thread computes (BackgroundSum). OpenMP threads never do.
  check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
  g_mpi = true;
  g_serialized = provided >= MPI_THREAD_SERIALIZED;
  // Errors come back as codes, turned into messages naming the rank, instead of MPI's abort.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &g_rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &g_size), "MPI_Comm_size");
  // Machines: the ranks that lead a shared-memory group, counted.
  MPI_Comm node;
  check_mpi(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_rank, MPI_INFO_NULL, &node),
            "MPI_Comm_split_type");
  int node_rank = 0;
  check_mpi(MPI_Comm_rank(node, &node_rank), "MPI_Comm_rank");
  MPI_Comm_free(&node);
  g_machines = node_rank == 0 ? 1 : 0;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &g_machines, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
#else
  if (std::atoi(std::getenv("OMPI_COMM_WORLD_SIZE")) > 1)
    LF_FAIL(
        "launched by mpirun with {} processes, but this build has no MPI (install libopenmpi-dev and build "
        "again; CMake says 'MPI: data-parallel training on')",
        std::getenv("OMPI_COMM_WORLD_SIZE"));
#endif
}

void World::set_peer_timeout(double seconds) {
  if (g_size == 1 || seconds <= 0 || g_watchdog.joinable()) return;
  const auto limit_ns = static_cast<int64_t>(seconds * 1e9);
  g_watchdog = std::thread([limit_ns, seconds] {
    while (!g_watchdog_stop.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      const int64_t since = g_collective_since.load();
      if (since == 0 || now_ns() - since < limit_ns) continue;
      spdlog::error(
          "rank {} of {}: no answer from the other processes for {:.0f} s in {} (one hung, or died): "
          "ending this process so that mpirun ends the job (--peer-timeout)",
          g_rank, g_size, seconds, g_collective_name.load());
      spdlog::default_logger()->flush();
      std::_Exit(1);  // the main thread is inside MPI: no clean exit from here
    }
  });
}

void World::finalize() {
  if (g_watchdog.joinable()) {
    g_watchdog_stop.store(true);
    g_watchdog.join();
  }
#ifdef LINFORMER_HAVE_MPI
  if (g_mpi) MPI_Finalize();
#endif
  g_mpi = false;
}

int World::rank() { return g_rank; }
int World::size() { return g_size; }
bool World::other_threads_may_call() { return g_serialized; }
bool World::spans_several_machines() { return g_machines > 1; }

namespace {
// "Open MPI v4.1.4" (the first part of MPI_Get_library_version, callable before MPI_Init).
std::string mpi_library() {
#ifdef LINFORMER_HAVE_MPI
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(version, &length);
  const std::string library(version, static_cast<size_t>(length));
  return library.substr(0, library.find(','));
#else
  return "";
#endif
}
}  // namespace

std::string World::description() {
  if (g_size == 1) return "1 process";
  return fmt::format("{} processes ({})", g_size, mpi_library());
}

std::string World::build_description() {
#ifdef LINFORMER_HAVE_MPI
  return "MPI (" + mpi_library() + "; launch with mpirun -np R)";
#else
  return "off (built without MPI)";
#endif
}

void World::sum([[maybe_unused]] float* data, [[maybe_unused]] size_t count) {
#ifdef LINFORMER_HAVE_MPI
  sum_in_place(data, count, MPI_FLOAT);
#endif
}

void World::sum([[maybe_unused]] double* data, [[maybe_unused]] size_t count) {
#ifdef LINFORMER_HAVE_MPI
  sum_in_place(data, count, MPI_DOUBLE);
#endif
}

void World::sum([[maybe_unused]] int64_t* data, [[maybe_unused]] size_t count) {
#ifdef LINFORMER_HAVE_MPI
  sum_in_place(data, count, MPI_INT64_T);
#endif
}

bool World::any(bool flag) {
  int64_t value = flag ? 1 : 0;
  sum(&value, 1);
  return value > 0;
}

void World::barrier() {
#ifdef LINFORMER_HAVE_MPI
  if (!g_mpi || g_size == 1) return;
  const CollectiveWait wait("MPI_Barrier");
  check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
#endif
}

void World::abort_all(int code) {
#ifdef LINFORMER_HAVE_MPI
  if (g_mpi && g_size > 1) MPI_Abort(MPI_COMM_WORLD, code);
#endif
  std::exit(code);
}

}  // namespace linformer

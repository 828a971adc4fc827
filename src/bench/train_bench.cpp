#include "linformer/bench/train_bench.h"

#include "linformer/bench/synthetic_batch.h"
#include "linformer/core/check.h"
#include "linformer/core/rng.h"
#include "linformer/core/thread_placement.h"
#include "linformer/kernels/context.h"
#include "linformer/kernels/kernel_timing.h"
#include "linformer/kernels/matmul.h"
#include "linformer/layers/attention.h"
#include "linformer/model/memory_estimate.h"
#include "linformer/model/mlm_model.h"
#include "linformer/optim/adamw.h"

#include <omp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <csignal>

#include <algorithm>
#include <array>
#include <chrono>

namespace linformer {

namespace {
// The benchmark's AdamW steps are tiny: the time is the same, the weights barely move.
constexpr double kBenchLearningRate = 1e-6;

// A child process that spins on the CPU until destroyed: the "other busy process" of a shared
// machine. It runs on every CPU this process may use (not just the pinned main thread's), so it
// competes for the same cores as an unrelated process would.
class BusyProcess {
 public:
  BusyProcess() : pid_(fork()) {
    LF_CHECK(pid_ >= 0, "bench train: cannot start a busy process beside the benchmark (fork failed)");
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the benchmark
      unpin_this_thread();
      for (int fd = 0; fd < 3; ++fd) close(fd);  // nor hold its output open
      for (volatile uint64_t spin = 0;; ++spin) {
      }
    }
  }
  ~BusyProcess() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  BusyProcess(const BusyProcess&) = delete;
  BusyProcess& operator=(const BusyProcess&) = delete;

 private:
  pid_t pid_;
};
}  // namespace

namespace {
// The best rate over 4 runs of one (m, k) · (k, n) product.
template <class T>
double best_matmul_gflops(int64_t m, int64_t k, int64_t n, T a_value, T b_value) {
  const std::vector<T> a(static_cast<size_t>(m * k), a_value), b(static_cast<size_t>(k * n), b_value);
  std::vector<float> c(static_cast<size_t>(m * n));
  const TensorView<const T> av(a.data(), Shape{m, k}), bv(b.data(), Shape{k, n});
  double best = 1e30;
  for (int rep = 0; rep < 4; ++rep) {
    const auto start = std::chrono::steady_clock::now();
    matmul(av, bv, TensorView<float>(c.data(), Shape{m, n}));
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return 2.0 * static_cast<double>(m * k * n) / best * 1e-9;
}

// The best over a few shapes: oneDNN's kernel for one square shape can be slower than those it
// picks for the model's (an AMX Xeon's fp32 1536³ product ran below the model's own products).
template <class T>
double best_probe_gflops(T a_value, T b_value) {
  double best = 0;
  for (const auto& [m, k, n] : {std::array<int64_t, 3>{1536, 1536, 1536}, std::array<int64_t, 3>{1024, 1024, 1024},
                                std::array<int64_t, 3>{2048, 2048, 2048}, std::array<int64_t, 3>{4096, 1024, 1024},
                                std::array<int64_t, 3>{4096, 256, 1024}})
    best = std::max(best, best_matmul_gflops(m, k, n, a_value, b_value));
  return best;
}
}  // namespace

double measure_matmul_peak_gflops(MatmulOperands operands) {
  if (operands == MatmulOperands::bf16) return best_probe_gflops(to_bf16(0.5f), to_bf16(0.25f));
  return best_probe_gflops(0.5f, 0.25f);
}

namespace {

// Per model stage and per kernel family, the means over the timed steps.
void record_step_times(TrainBenchResult& r, MlmModel& model, int timed_steps) {
  const auto kernels = kernel_timing();
  for (int i = 0; i < kKernelKinds; ++i) {
    const KernelTotals& k = kernels[i];
    r.kernels.push_back({kernel_name(static_cast<KernelKind>(i)), 1e3 * k.seconds / timed_steps,
                         static_cast<double>(k.calls) / timed_steps, k.seconds > 0 ? 1e-9 * k.flops / k.seconds : 0.0});
  }
  const auto& times = model.stage_times();
  for (size_t i = 0; i < times.names.size(); ++i)
    r.stages.push_back(
        {times.names[i], 1e3 * times.forward_seconds[i] / timed_steps, 1e3 * times.backward_seconds[i] / timed_steps});
}

// The measured matmul peaks, the run's rates against them, and the ceiling: the step's timed work
// with every matmul at the peak instead. Needs the timings, FLOPs and median already in `r`.
void record_peaks_and_ceiling(TrainBenchResult& r, const MatmulPrecision& precision) {
  r.bf16 = precision.bf16;
  r.precision_note = precision.note;
  // The f32 probe with f32 operands (not rounded to bf16), then the run's precision again.
  select_matmul_precision(false);
  r.fp32_peak_gflops = measure_matmul_peak_gflops(MatmulOperands::f32);
  if (cpu_has_bf16()) r.bf16_peak_gflops = measure_matmul_peak_gflops(MatmulOperands::bf16);
  select_matmul_precision(precision.bf16);
  r.peak_gflops = precision.bf16 ? r.bf16_peak_gflops : r.fp32_peak_gflops;
  const double tokens = static_cast<double>(r.batch * r.seq_len);
  r.tokens_per_s = tokens / r.median_s;
  r.gflops_per_s = 3 * r.forward_gflop / r.median_s;
  double step_ms = r.optimizer_ms;
  for (const auto& stage : r.stages) step_ms += stage.forward_ms + stage.backward_ms;
  const double matmul_ms = r.kernels[static_cast<size_t>(KernelKind::matmul)].ms;
  r.ceiling_step_ms = step_ms - matmul_ms + 3e3 * r.forward_gflop / r.peak_gflops;
  r.ceiling_tokens_per_s = tokens / (1e-3 * r.ceiling_step_ms);
}

// The step's shape, FLOPs and memory (but the peak RSS).
void record_shape_and_memory(TrainBenchResult& r, const MlmModel& model, int64_t B, int64_t T, int64_t M) {
  const ModelSpec& spec = model.spec();
  r.batch = B;
  r.seq_len = T;
  r.masked = M;
  r.threads = omp_get_max_threads();
  r.thread_placement = openmp_thread_placement();
  r.last_block_rows = model.last_block_rows();
  r.every_row_forward_gflop = MlmModel::forward_matmul_flops(spec, B, T, M) * 1e-9;
  r.forward_gflop = MlmModel::forward_matmul_flops(spec, B, T, M, r.last_block_rows) * 1e-9;
  r.flops_per_token = 3 * r.forward_gflop * 1e9 / static_cast<double>(B * T);
  r.parameter_bytes = model.params().values().layout().bytes();
  r.activation_bytes = model.activation_bytes();
}

}  // namespace

TrainBenchResult bench_train(const config::Recipe& recipe, int warmup_steps, int timed_steps, bool beside_busy_process,
                             bool every_row) {
  const ModelSpec spec = ModelSpec::from_recipe(recipe);
  const OpenmpTeam openmp_team(recipe.threads);  // pinned until the command returns
  const MatmulPrecision precision = select_matmul_precision(recipe.train.precision == config::Precision::bf16);
  const int64_t B = recipe.train.batch_size, T = spec.seq_len;
  // A synthetic batch: full rows, ordinary ids, masking.probability of the positions masked.
  const SyntheticBatch synthetic(B, T, spec.vocab_size, static_cast<uint64_t>(recipe.seed), recipe.masking.probability);
  const int64_t M = synthetic.masked();
  check_memory_fits(spec, B, std::max<int64_t>(M, 1), WorkspaceUse::training, "bench train",
                    fmt::format("model.layers = {}, model.d_model = {}, train.batch_size = {} and data.seq_len = {}",
                                spec.layers, spec.d_model, B, T));
  MlmModel model(spec, B, std::max<int64_t>(M, 1));
  model.params().initialize(static_cast<uint64_t>(recipe.seed));
  model.compute_every_row(every_row);
  AdamW optimizer(model.params(), recipe.optim);
  const MlmBatchView batch = synthetic.view();

  using Clock = std::chrono::steady_clock;
  double optimizer_seconds = 0;
  int64_t step_count = 0;
  bool kernel_timing_on = false;  // the timed idle steps only
  // One training step; returns its wall time in seconds.
  auto step = [&] {
    const Pass pass{true, static_cast<uint64_t>(recipe.seed), static_cast<uint64_t>(step_count++)};
    const auto start = Clock::now();
    model.params().zero_grads();
    model.forward_backward(batch, pass, 1.0f / static_cast<float>(M));
    const auto before_optimizer = Clock::now();
    enable_kernel_timing(false);  // the optimizer has its own line
    optimizer.step(kBenchLearningRate);
    enable_kernel_timing(kernel_timing_on);
    const auto end = Clock::now();
    optimizer_seconds += std::chrono::duration<double>(end - before_optimizer).count();
    return std::chrono::duration<double>(end - start).count();
  };
  model.enable_stage_timing(true);
  for (int i = 0; i < warmup_steps; ++i) step();
  model.stage_times().reset();
  reset_kernel_timing();
  optimizer_seconds = 0;
  kernel_timing_on = true;
  enable_kernel_timing(true);
  std::vector<double> seconds;  // [timed_steps]
  for (int i = 0; i < timed_steps; ++i) seconds.push_back(step());
  kernel_timing_on = false;
  enable_kernel_timing(false);
  model.enable_stage_timing(false);
  const double idle_optimizer_seconds = optimizer_seconds;
  TrainBenchResult r;
  if (beside_busy_process) {
    // The same steps again with a CPU-bound process competing for this process's CPUs.
    const BusyProcess neighbour;
    for (int i = 0; i < warmup_steps; ++i) step();
    std::vector<double> shared;  // [timed_steps]
    for (int i = 0; i < timed_steps; ++i) shared.push_back(step());
    std::sort(shared.begin(), shared.end());
    r.shared_tokens_per_s = static_cast<double>(B * T) / shared[shared.size() / 2];
  }
  std::sort(seconds.begin(), seconds.end());
  r.matmul_implementations = matmul_implementations();  // before the peak probe adds its own
  record_step_times(r, model, timed_steps);
  r.steps = timed_steps;
  r.median_s = seconds[seconds.size() / 2];
  r.min_s = seconds.front();
  r.max_s = seconds.back();
  r.optimizer_ms = 1e3 * idle_optimizer_seconds / timed_steps;
  r.optim = recipe.optim;
  record_shape_and_memory(r, model, B, T, M);
  record_peaks_and_ceiling(r, precision);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  r.peak_rss_kb = usage.ru_maxrss;
  return r;
}

std::string to_json(const TrainBenchResult& r, const ModelSpec& spec) {
  nlohmann::json j = {{"model", spec},
                      {"batch", r.batch},
                      {"seq_len", r.seq_len},
                      {"masked", r.masked},
                      {"last_block_rows", r.last_block_rows},
                      {"threads", r.threads},
                      {"thread_placement", r.thread_placement},
                      {"timed_steps", r.steps},
                      {"step_seconds", {{"median", r.median_s}, {"min", r.min_s}, {"max", r.max_s}}},
                      {"tokens_per_second", r.tokens_per_s},
                      {"tokens_per_second_beside_busy_process",
                       r.shared_tokens_per_s > 0 ? nlohmann::json(r.shared_tokens_per_s) : nlohmann::json(nullptr)},
                      {"flops_per_token", r.flops_per_token},
                      {"optimizer_ms", r.optimizer_ms},
                      {"optimizer",
                       {{"name", "adamw"},
                        {"lr", kBenchLearningRate},
                        {"betas", {r.optim.adam_beta1, r.optim.adam_beta2}},
                        {"eps", r.optim.adam_eps},
                        {"weight_decay", r.optim.weight_decay},
                        {"decay_bias_and_norm", r.optim.decay_bias_and_norm}}},
                      {"measured_fp32_matmul_peak_gflops", r.fp32_peak_gflops},
                      {"measured_bf16_matmul_peak_gflops",
                       r.bf16_peak_gflops > 0 ? nlohmann::json(r.bf16_peak_gflops) : nlohmann::json(nullptr)},
                      {"fraction_of_measured_peak", r.gflops_per_s / r.peak_gflops},
                      {"ceiling_step_ms", r.ceiling_step_ms},
                      {"ceiling_tokens_per_second", r.ceiling_tokens_per_s},
                      {"precision", r.bf16 ? "bf16" : "fp32"},
                      {"precision_note", r.precision_note},
                      {"forward_gflop_per_step", r.forward_gflop},
                      {"every_row_forward_gflop_per_step", r.every_row_forward_gflop},
                      {"train_gflops_per_second", r.gflops_per_s},
                      {"parameter_bytes", r.parameter_bytes},
                      {"activation_bytes", r.activation_bytes},
                      {"peak_rss_kb", r.peak_rss_kb}};
  for (const auto& stage : r.stages)
    j["stages"].push_back({{"name", stage.name}, {"forward_ms", stage.forward_ms}, {"backward_ms", stage.backward_ms}});
  j["matmul_implementations"] = r.matmul_implementations;
  for (const auto& kernel : r.kernels)
    j["kernels"].push_back({{"name", kernel.name},
                            {"ms_per_step", kernel.ms},
                            {"calls_per_step", kernel.calls},
                            {"gflops_per_second", kernel.gflops}});
  return j.dump(2);
}

}  // namespace linformer

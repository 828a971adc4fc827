#include "linformer/bench/attention_bench.h"

#include "linformer/bench/synthetic_batch.h"
#include "linformer/bench/train_bench.h"
#include "linformer/core/check.h"
#include "linformer/core/clock.h"
#include "linformer/core/rng.h"
#include "linformer/core/thread_placement.h"
#include "linformer/kernels/matmul.h"
#include "linformer/model/mlm_model.h"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <optional>

namespace linformer {

namespace {

// Linformer Table 3 (V100, 16 GB, layerwise sharing): {speed-up, memory saving} by (n, k).
const std::map<std::pair<int64_t, int64_t>, std::pair<double, double>>& paper_table() {
  static const std::map<std::pair<int64_t, int64_t>, std::pair<double, double>> table = {
      {{512, 128}, {1.5, 1.7}},   {{512, 256}, {1.3, 1.5}},   {{1024, 128}, {1.7, 3.0}},  {{1024, 256}, {1.6, 2.9}},
      {{1024, 512}, {1.3, 1.8}},  {{2048, 128}, {2.6, 6.1}},  {{2048, 256}, {2.4, 5.6}},  {{2048, 512}, {2.1, 3.6}},
      {{2048, 1024}, {1.3, 2.0}}, {{4096, 128}, {3.4, 14}},   {{4096, 256}, {3.2, 13}},   {{4096, 512}, {2.8, 8.3}},
      {{4096, 1024}, {2.2, 4.3}}, {{4096, 2048}, {1.3, 2.3}}, {{8192, 128}, {5.5, 28}},   {{8192, 256}, {5.0, 26}},
      {{8192, 512}, {4.4, 17}},   {{8192, 1024}, {3.5, 8.5}}, {{8192, 2048}, {2.1, 4.5}}, {{16384, 128}, {8.6, 56}},
      {{16384, 256}, {7.8, 48}},  {{16384, 512}, {7.0, 32}},  {{16384, 1024}, {5.6, 16}}, {{16384, 2048}, {3.3, 8}},
      {{32768, 128}, {13, 56}},   {{32768, 256}, {12, 48}},   {{32768, 512}, {11, 36}},   {{32768, 1024}, {8.8, 18}},
      {{32768, 2048}, {5.0, 16}}, {{65536, 128}, {20, 60}},   {{65536, 256}, {18, 52}},   {{65536, 512}, {16, 40}},
      {{65536, 1024}, {14, 20}},  {{65536, 2048}, {7.9, 18}}};
  return table;
}

std::optional<std::pair<double, double>> paper_cell(int64_t n, int64_t k) {
  const auto it = paper_table().find({n, k});
  if (it == paper_table().end()) return std::nullopt;
  return it->second;
}

ModelSpec cell_spec(const ModelSpec& base, int64_t n, int64_t k) {
  ModelSpec spec = base;
  spec.seq_len = static_cast<int>(n);
  spec.dropout = spec.attention_dropout = spec.activation_dropout = 0;
  if (k == 0) {
    spec.attention = config::AttentionKind::full;
    spec.k_per_layer.clear();
  } else {
    spec.attention = config::AttentionKind::linformer;
    spec.sharing = config::Sharing::layerwise;
    spec.projection = config::ProjectionKind::linear;
    spec.k_per_layer.assign(static_cast<size_t>(spec.layers), static_cast<int>(k));
  }
  spec.validate();
  return spec;
}

// A lower bound of one sequence's activation bytes, in floating point: the hidden states (n × d
// per layer) and the attention scores (n × k, or n × n, per head). Beyond 1 PiB no budget is met
// and the planner's integer sizes could overflow, so such a cell is refused on this bound alone.
double activation_bytes_lower_bound(const ModelSpec& spec, int64_t n, int64_t k) {
  const auto N = static_cast<double>(n);
  return sizeof(float) * (N * spec.d_model * spec.layers + N * static_cast<double>(k ? k : n) * spec.heads);
}

// Sizes, and (when it fits the budget and the time limit) times, one cell. `rate` is the
// GFLOP/s the previous cell of this kind reached: the time estimate before running.
AttentionCell run_cell(const ModelSpec& base, int64_t n, int64_t k, const AttentionBenchOptions& o, double& rate) {
  AttentionCell cell;
  cell.n = n;
  cell.k = k;
  const ModelSpec spec = cell_spec(base, n, k);
  const double at_least = activation_bytes_lower_bound(spec, n, k);
  if (at_least > std::min(static_cast<double>(o.memory_budget_bytes), 0x1p50)) {
    cell.bytes_per_sequence = static_cast<size_t>(std::min(at_least, 0x1p62));
    cell.status = CellStatus::over_memory_budget;
    return cell;
  }
  const auto use = WorkspaceUse::inference;
  const size_t one = MlmModel::planned_activation_bytes(spec, 1, 1, use);
  const size_t two = MlmModel::planned_activation_bytes(spec, 2, 2, use);
  size_t parameter_bytes = 0;  // values and gradients (an inference model has both arenas)
  const ParameterTable table = MlmModel::parameter_table(spec);
  for (const auto& p : table.entries()) parameter_bytes += 2 * sizeof(float) * static_cast<size_t>(p.shape.numel());
  cell.bytes_per_sequence = two - one;
  cell.fixed_bytes = parameter_bytes + (one - cell.bytes_per_sequence);
  cell.max_batch = o.memory_budget_bytes > cell.fixed_bytes
                       ? static_cast<int64_t>((o.memory_budget_bytes - cell.fixed_bytes) / cell.bytes_per_sequence)
                       : 0;
  const double flops_per_sequence = MlmModel::forward_matmul_flops(spec, 1, n, 1);
  cell.estimated_seconds_per_sequence = flops_per_sequence / (rate * 1e9);
  if (cell.max_batch < 1) {
    cell.status = CellStatus::over_memory_budget;
    return cell;
  }
  if (cell.estimated_seconds_per_sequence > o.time_limit_s) {
    cell.status = CellStatus::over_time_limit;
    return cell;
  }
  // Warm-up plus at least one timed pass within the time limit.
  const auto fit = static_cast<int64_t>(o.time_limit_s / (2 * cell.estimated_seconds_per_sequence));
  cell.timed_batch = std::max<int64_t>(1, std::min({cell.max_batch, o.max_timed_batch, fit}));
  const int64_t B = cell.timed_batch;

  MlmModel model(spec, B, B, use);
  model.params().initialize(1);
  const SyntheticBatch batch(B, n, spec.vocab_size, 1, 0.0);
  const auto begin = std::chrono::steady_clock::now();
  auto pass = [&] {
    const auto start = std::chrono::steady_clock::now();
    model.forward(batch.view(), Pass{});
    return seconds_since(start);
  };
  double last = pass();  // warm-up: creates the oneDNN primitives
  std::vector<double> times;
  while (times.empty() ||
         (static_cast<int>(times.size()) < o.repeats && seconds_since(begin) + last <= o.time_limit_s)) {
    last = pass();
    times.push_back(last);
  }
  std::sort(times.begin(), times.end());
  cell.passes = static_cast<int>(times.size());
  const double median = times[times.size() / 2];
  cell.seconds_per_sequence = median / static_cast<double>(B);
  cell.gflops_per_s = MlmModel::forward_matmul_flops(spec, B, n, B) / median * 1e-9;
  rate = cell.gflops_per_s;
  return cell;
}

const AttentionCell* find_full(const AttentionBenchResult& r, int64_t n) {
  for (const auto& c : r.full)
    if (c.n == n) return &c;
  return nullptr;
}

std::string ratio(double x) { return x >= 10 ? fmt::format("{:.0f}x", x) : fmt::format("{:.1f}x", x); }

std::string mib(size_t bytes) { return fmt::format("{:.1f}", static_cast<double>(bytes) / (1 << 20)); }

}  // namespace

const char* status_name(CellStatus s) {
  switch (s) {
    case CellStatus::measured:
      return "measured";
    case CellStatus::over_memory_budget:
      return "over memory budget";
    case CellStatus::over_time_limit:
      return "over time limit";
  }
  return "?";
}

size_t parse_memory_size(const std::string& text) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = text.substr(used);
  LF_CHECK(used > 0 && value > 0 && std::isfinite(value),
           "memory size '{}': expected a positive number with an optional unit (e.g. 16GiB, 500MB)", text);
  static const std::map<std::string, double> units = {{"", 1},
                                                      {"B", 1},
                                                      {"K", 1024.0},
                                                      {"KiB", 1024.0},
                                                      {"kB", 1e3},
                                                      {"M", 1024.0 * 1024},
                                                      {"MiB", 1024.0 * 1024},
                                                      {"MB", 1e6},
                                                      {"G", 1024.0 * 1024 * 1024},
                                                      {"GiB", 1024.0 * 1024 * 1024},
                                                      {"GB", 1e9},
                                                      {"T", 1024.0 * 1024 * 1024 * 1024},
                                                      {"TiB", 1024.0 * 1024 * 1024 * 1024},
                                                      {"TB", 1e12}};
  const auto it = units.find(unit);
  LF_CHECK(it != units.end(), "memory size '{}': unknown unit '{}' (use B, K/KiB/kB, M/MiB/MB, G/GiB/GB, T/TiB/TB)",
           text, unit);
  return static_cast<size_t>(value * it->second);
}

AttentionBenchResult bench_attention(const config::Recipe& recipe, const AttentionBenchOptions& o,
                                     const std::function<void(const AttentionCell&)>& report) {
  LF_CHECK(!o.lengths.empty() && !o.ks.empty(), "bench attention needs at least one n and one k");
  LF_CHECK(o.repeats >= 1 && o.max_timed_batch >= 1 && o.time_limit_s > 0,
           "bench attention: bad repeats/batch/time limit");
  const OpenmpTeam openmp_team(recipe.threads);  // pinned until the command returns
  const ModelSpec base = ModelSpec::from_recipe(recipe);
  AttentionBenchResult r;
  r.threads = omp_get_max_threads();
  r.precision = matmul_bf16_operands() ? "bf16" : "fp32";
  r.model = fmt::format("{} layers, d {}, heads {}, FFN {}, vocabulary {}, {}-LN", base.layers, base.d_model,
                        base.heads, base.ffn_dim, base.vocab_size, config::enum_name(base.norm));
  // A first guess for the time limit; each measured cell replaces it with its own rate.
  double full_rate = 50, linformer_rate = 50;
  for (const int64_t n : o.lengths) {
    r.full.push_back(run_cell(base, n, 0, o, full_rate));
    if (report) report(r.full.back());
    for (const int64_t k : o.ks) {
      if (k >= n) continue;
      r.linformer.push_back(run_cell(base, n, k, o, linformer_rate));
      if (report) report(r.linformer.back());
    }
  }
  return r;
}

std::string format_attention_table(const AttentionBenchResult& r, const AttentionBenchOptions& o) {
  std::vector<int64_t> ks;
  for (const int64_t k : o.ks) ks.push_back(k);
  auto grid = [&](const std::string& title, auto&& cell_text) {
    std::string s = title + "\n\n| n \\ k |";
    for (const int64_t k : ks) s += fmt::format(" {} |", k);
    s += "\n|---|";
    for (size_t i = 0; i < ks.size(); ++i) s += "---|";
    s += "\n";
    for (const int64_t n : o.lengths) {
      s += fmt::format("| {} |", n);
      for (const int64_t k : ks) s += " " + (k < n ? cell_text(n, k) : std::string()) + " |";
      s += "\n";
    }
    return s + "\n";
  };
  auto find_linformer = [&](int64_t n, int64_t k) -> const AttentionCell* {
    for (const auto& c : r.linformer)
      if (c.n == n && c.k == k) return &c;
    return nullptr;
  };
  std::string text = fmt::format(
      "Linformer (layerwise sharing) vs full attention, inference, {} threads, {} matmuls; encoder: {}.\n"
      "Cells: speed-up (time per sequence) / memory saving (activation memory per sequence{}).\n"
      "Memory budget {:.1f} GiB, time limit {:.0f} s per cell.\n\n",
      r.threads, r.precision, r.model,
      r.precision == "bf16" ? "; bf16 copies of the attention's operands included, of the linear layers' inputs (a "
                              "chunk of rows at most) not"
                            : "",
      static_cast<double>(o.memory_budget_bytes) / (1 << 30), o.time_limit_s);
  text += grid("This machine", [&](int64_t n, int64_t k) -> std::string {
    const AttentionCell* lin = find_linformer(n, k);
    const AttentionCell* full = find_full(r, n);
    if (!lin || !full) return "";
    const std::string memory = ratio(static_cast<double>(full->bytes_per_sequence) / lin->bytes_per_sequence);
    if (lin->status != CellStatus::measured) return fmt::format("Linformer {} / {}", status_name(lin->status), memory);
    if (full->status != CellStatus::measured) return fmt::format("full {} / {}", status_name(full->status), memory);
    return ratio(full->seconds_per_sequence / lin->seconds_per_sequence) + " / " + memory;
  });
  text += grid("The paper (V100 16 GB, Table 3)", [&](int64_t n, int64_t k) -> std::string {
    const auto p = paper_cell(n, k);
    return p ? ratio(p->first) + " / " + ratio(p->second) : "";
  });
  text += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n|---|---|---|---|---|---|---|---|---|\n", "n",
                      "attention", "status", "MiB per sequence", "largest batch", "timed batch", "ms per sequence",
                      "GFLOP/s", "passes");
  auto row = [&](const AttentionCell& c) {
    const bool measured = c.status == CellStatus::measured;
    text +=
        fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", c.n,
                    c.k ? fmt::format("Linformer k={}", c.k) : std::string("full"), status_name(c.status),
                    mib(c.bytes_per_sequence), c.max_batch, measured ? std::to_string(c.timed_batch) : "",
                    measured ? fmt::format("{:.1f}", c.seconds_per_sequence * 1e3)
                             : fmt::format("(est. {:.0f})", c.estimated_seconds_per_sequence * 1e3),
                    measured ? fmt::format("{:.0f}", c.gflops_per_s) : "", measured ? std::to_string(c.passes) : "");
  };
  for (const int64_t n : o.lengths) {
    if (const AttentionCell* full = find_full(r, n)) row(*full);
    for (const int64_t k : ks)
      if (const AttentionCell* lin = find_linformer(n, k)) row(*lin);
  }
  return text;
}

std::string attention_csv(const AttentionBenchResult& r) {
  std::string csv =
      "n,k,attention,status,bytes_per_sequence,fixed_bytes,max_batch,timed_batch,passes,seconds_per_sequence,"
      "estimated_seconds_per_sequence,gflops_per_s,speedup,memory_saving,paper_speedup,paper_memory_saving,precision\n";
  auto row = [&](const AttentionCell& c, const AttentionCell* full) {
    std::string speedup, memory, paper_speedup, paper_memory;
    if (full) {
      memory = fmt::format("{:.3f}", static_cast<double>(full->bytes_per_sequence) / c.bytes_per_sequence);
      if (c.status == CellStatus::measured && full->status == CellStatus::measured)
        speedup = fmt::format("{:.3f}", full->seconds_per_sequence / c.seconds_per_sequence);
      if (const auto p = paper_cell(c.n, c.k)) {
        paper_speedup = fmt::format("{}", p->first);
        paper_memory = fmt::format("{}", p->second);
      }
    }
    const bool measured = c.status == CellStatus::measured;
    csv += fmt::format("{},{},{},{},{},{},{},{},{},{},{:.6g},{},{},{},{},{},{}\n", c.n, c.k, c.k ? "linformer" : "full",
                       status_name(c.status), c.bytes_per_sequence, c.fixed_bytes, c.max_batch,
                       measured ? std::to_string(c.timed_batch) : "", measured ? std::to_string(c.passes) : "",
                       measured ? fmt::format("{:.6g}", c.seconds_per_sequence) : "", c.estimated_seconds_per_sequence,
                       measured ? fmt::format("{:.1f}", c.gflops_per_s) : "", speedup, memory, paper_speedup,
                       paper_memory, r.precision);
  };
  for (const auto& c : r.full) row(c, nullptr);
  for (const auto& c : r.linformer) row(c, find_full(r, c.n));
  return csv;
}

}  // namespace linformer

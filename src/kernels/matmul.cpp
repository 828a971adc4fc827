#include "linformer/kernels/matmul.h"

#include "linformer/core/arena.h"
#include "linformer/kernels/context.h"
#include "linformer/kernels/kernel_timing.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <type_traits>
#include <unordered_map>

namespace linformer {

namespace {

using dims = dnnl::memory::dims;

dims to_dims(const Shape& s) {
  dims d(s.rank());
  for (int i = 0; i < s.rank(); ++i) d[i] = s[i];
  return d;
}

// Everything that decides the primitive: the three views' shapes and strides, the mode, the bias.
struct Key {
  std::vector<int64_t> values;
  bool operator==(const Key& o) const { return values == o.values; }
};
struct KeyHash {
  size_t operator()(const Key& k) const {
    size_t h = 0;
    for (int64_t v : k.values) h = h * 1000003u ^ std::hash<int64_t>()(v);
    return h;
  }
};

void append(std::vector<int64_t>& out, const Shape& s) {
  out.push_back(s.rank());
  for (int i = 0; i < s.rank(); ++i) out.push_back(s[i]);
}

// A built product: the matmul, and for a product that packs its weights operand (packs_weights
// below) the reorder that writes B in the kernel's own blocked layout.
struct Built {
  dnnl::matmul product;
  dnnl::reorder pack;                 // empty unless B is packed
  dnnl::memory::desc packed_weights;  // B's blocked layout, when packed
};

struct Cache {
  std::mutex mutex;
  std::unordered_map<Key, Built, KeyHash> primitives;
  std::map<std::string, size_t> implementations;  // oneDNN's name for each primitive's kernel -> count
};
Cache& cache() {
  static Cache c;
  return c;
}

// A grow-only buffer per calling thread and slot (a matmul's scratch roles), `skew` bytes past
// an aligned start.
void* thread_scratch(int slot, size_t bytes, size_t skew) {
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  constexpr int kSlots = 4;
  thread_local std::array<std::unique_ptr<void, Free>, kSlots> storage;
  thread_local std::array<size_t, kSlots> capacity{};
  if (bytes > capacity[slot]) {
    const size_t total = (bytes + skew + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
    storage[slot].reset(std::aligned_alloc(kArenaAlignment, total));
    LF_CHECK(storage[slot] != nullptr, "out of memory allocating a {}-byte matmul scratch", bytes);
    capacity[slot] = bytes;
  }
  return static_cast<char*>(storage[slot].get()) + skew;
}

enum ScratchSlot { kTransposed, kBf16A, kBf16B, kPackedB };

std::atomic<bool> packed_weights_on{true};

// Whether a product reorders its weights operand B (k, n) into the kernel's blocked layout before
// it runs. oneDNN's brgemm otherwise copies B's blocks again for every block of rows it computes.
// On a tall product (m ≥ 2k: a Linear's forward or dx over a batch of tokens) one reorder per call
// costs about 1/m of the product; in a bf16 training step on a Zen 4 EPYC the packed products ran
// 3-12% faster, all matmul time 1.8% less with the reorders (results/2026-11-27_zen4_packed_weights/).
// Weight gradients, whose B is the layer's input over many rows, gain nothing. The kernel reads
// the same blocked B either way, so the result is the same to the bit. Not on AVX2-only CPUs,
// whose sgemm has no blocked B, nor for a B over 64 MB (a large vocabulary's f32 embedding),
// whose packed copy would stay as a scratch.
bool packs_weights(int rank, int64_t m, int64_t k, size_t b_bytes) {
  constexpr size_t kMaxPackedBytes = size_t{64} << 20;
  return rank == 2 && m >= 2 * k && b_bytes <= kMaxPackedBytes && !matmul_runs_avx2_sgemm() &&
         packed_weights_on.load(std::memory_order_relaxed);
}

template <class T>
constexpr dnnl::memory::data_type data_type_of() {
  if constexpr (std::is_same_v<T, bf16>) return dnnl::memory::data_type::bf16;
  return dnnl::memory::data_type::f32;
}

// Builds (once) and runs the oneDNN primitive for these views: f32 or bf16 operands, an f32
// result (or bf16, rounded from oneDNN's f32 accumulators).
template <class T, class Out = float>
void run_primitive(TensorView<const T> a, TensorView<const T> b, TensorView<Out> c, Accumulate mode,
                   const float* bias) {
  const int rank = c.rank();
  const int64_t n = b.size(rank - 1);
  Key key;
  for (const auto* s : {&a.shape(), &a.strides(), &b.shape(), &b.strides(), &c.shape(), &c.strides()})
    append(key.values, *s);
  key.values.push_back(mode == Accumulate::add);
  key.values.push_back(bias != nullptr);
  key.values.push_back(static_cast<int64_t>(dnnl::get_default_fpmath_mode()));
  key.values.push_back(static_cast<int64_t>(data_type_of<T>()));
  key.values.push_back(static_cast<int64_t>(data_type_of<Out>()));
  const bool pack = packs_weights(rank, a.size(rank - 2), a.size(rank - 1), static_cast<size_t>(b.numel()) * sizeof(T));
  key.values.push_back(pack);

  auto& ctx = DnnlContext::get();
  using dt = dnnl::memory::data_type;
  const dnnl::memory::desc a_md(to_dims(a.shape()), data_type_of<T>(), to_dims(a.strides()));
  const dnnl::memory::desc b_md(to_dims(b.shape()), data_type_of<T>(), to_dims(b.strides()));
  const dnnl::memory::desc c_md(to_dims(c.shape()), data_type_of<Out>(), to_dims(c.strides()));
  // The bias is a row of N values broadcast over every other axis.
  dims bias_dims(rank, 1), bias_strides(rank, 0);
  bias_dims[rank - 1] = n;
  bias_strides[rank - 1] = 1;
  const dnnl::memory::desc bias_md(bias_dims, dt::f32, bias_strides);

  const Built* built;
  {
    auto& cc = cache();
    std::lock_guard<std::mutex> lock(cc.mutex);
    auto it = cc.primitives.find(key);
    if (it == cc.primitives.end()) {
      dnnl::primitive_attr attr;
      if (mode == Accumulate::add) {
        dnnl::post_ops ops;
        ops.append_sum(1.0f);
        attr.set_post_ops(ops);
      }
      auto describe = [&](const dnnl::memory::desc& weights) {
        const auto desc =
            bias ? dnnl::matmul::desc(a_md, weights, bias_md, c_md) : dnnl::matmul::desc(a_md, weights, c_md);
        return dnnl::matmul::primitive_desc(desc, attr, ctx.engine());
      };
      const dnnl::matmul::primitive_desc plain = describe(b_md);
      Built entry{dnnl::matmul(plain), {}, {}};
      std::string implementation = plain.impl_info_str();
      if (pack) {
        // Packed only where brgemm runs both products and takes B in blocks: it copies a plain B
        // into those same blocks, so the arithmetic is the same. (gemm:jit's choice for B is a
        // plain layout, perhaps transposed, which can change the order of its sums.)
        const auto packed = describe(dnnl::memory::desc(b_md.dims(), data_type_of<T>(), dnnl::memory::format_tag::any));
        const auto& packed_b = packed.weights_desc().data;
        const bool blocked = packed_b.format_kind == dnnl_blocked && packed_b.format_desc.blocking.inner_nblks > 0;
        if (implementation == packed.impl_info_str() && implementation.rfind("brg", 0) == 0 && blocked) {
          entry = Built{
              dnnl::matmul(packed),
              dnnl::reorder(dnnl::reorder::primitive_desc(ctx.engine(), b_md, ctx.engine(), packed.weights_desc())),
              packed.weights_desc()};
          implementation += " (packed weights)";
        }
      }
      ++cc.implementations[implementation];
      it = cc.primitives.emplace(key, std::move(entry)).first;
    }
    built = &it->second;
  }
  const auto& engine = ctx.engine();
  dnnl::memory a_mem(a_md, engine, const_cast<T*>(a.data()));
  dnnl::memory b_mem(b_md, engine, const_cast<T*>(b.data()));
  dnnl::memory c_mem(c_md, engine, c.data());
  if (built->pack) {
    dnnl::memory packed(built->packed_weights, engine, thread_scratch(kPackedB, built->packed_weights.get_size(), 0));
    built->pack.execute(ctx.stream(), b_mem, packed);
    b_mem = packed;
  }
  std::unordered_map<int, dnnl::memory> args = {
      {DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, c_mem}};
  if (bias) args.emplace(DNNL_ARG_BIAS, dnnl::memory(bias_md, engine, const_cast<float*>(bias)));
  built->product.execute(ctx.stream(), args);
  ctx.stream().wait();
}

// oneDNN 2.6 on CPUs without AVX-512 runs f32 matmuls on its AVX2 sgemm, which computes
// C = Aᵀ·B with a long inner axis at half speed when C is tall and narrow (m ≥ 2n, m ≥ 512,
// n ≤ 256): the weight gradient dyᵀx of a widening layer such as the feed-forward's fc1. The
// same product transposed, Cᵀ = Bᵀ·A, runs at full speed (results/2026-11-22_matmul_quirks/),
// so such calls compute Cᵀ into a scratch and write it back transposed. Small k (k < m) loses
// to the extra pass.
bool computes_transposed(TensorView<const float> a, TensorView<const float> b, TensorView<float> c, const float* bias) {
  if (!matmul_runs_avx2_sgemm() || c.rank() != 2 || bias != nullptr) return false;
  const int64_t m = c.size(0), n = c.size(1), k = a.size(1);
  const bool a_transposed = a.stride(0) == 1 && a.stride(1) >= m;
  const bool b_rows = b.stride(1) == 1, c_rows = c.stride(1) == 1;
  return a_transposed && b_rows && c_rows && n <= 256 && m >= std::max<int64_t>(2 * n, 512) && k >= m;
}

// c (m, n) (=|+=) tᵀ for t (n, m) contiguous, in 32×32 tiles so both sides stay in cache.
void write_transposed(const float* t, TensorView<float> c, Accumulate mode) {
  constexpr int64_t kTile = 32;
  const int64_t m = c.size(0), n = c.size(1), ldc = c.stride(0);
  float* const out = c.data();
  const bool add = mode == Accumulate::add;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t i0 = 0; i0 < m; i0 += kTile)
    for (int64_t j0 = 0; j0 < n; j0 += kTile)
      for (int64_t i = i0; i < std::min(m, i0 + kTile); ++i)
        for (int64_t j = j0; j < std::min(n, j0 + kTile); ++j)
          out[i * ldc + j] = (add ? out[i * ldc + j] : 0.0f) + t[j * m + i];
}

float* transposed_scratch(int64_t numel) {
  return static_cast<float*>(
      thread_scratch(kTransposed, static_cast<size_t>(numel) * sizeof(float), matmul_operand_skew_bytes()));
}

bf16* bf16_scratch(ScratchSlot slot, int64_t numel) {
  return static_cast<bf16*>(thread_scratch(slot, static_cast<size_t>(numel) * sizeof(bf16), 0));
}

std::atomic<bool> bf16_operands{false};

}  // namespace

bool matmul_runs_avx2_sgemm() {
  using isa = dnnl::cpu_isa;
  static const bool avx2 = [] {
    const isa max = dnnl::get_effective_cpu_isa();
    return max == isa::avx2 || max == isa::avx2_vnni;
  }();
  return avx2;
}

size_t matmul_operand_skew_bytes() { return matmul_runs_avx2_sgemm() ? 16 : 0; }

namespace {
// The shapes agree; false when there is nothing to compute.
template <class T, class Out>
bool check_matmul(TensorView<const T> a, TensorView<const T> b, TensorView<Out> c, Accumulate mode, const float* bias) {
  const int rank = c.rank();
  LF_CHECK(rank >= 2 && a.rank() == rank && b.rank() == rank, "matmul ranks {} · {} -> {}", a.shape().str(),
           b.shape().str(), c.shape().str());
  const int64_t m = a.size(rank - 2), k = a.size(rank - 1), n = b.size(rank - 1);
  LF_CHECK(b.size(rank - 2) == k && c.size(rank - 2) == m && c.size(rank - 1) == n,
           "matmul shapes {} · {} -> {} do not agree", a.shape().str(), b.shape().str(), c.shape().str());
  for (int d = 0; d < rank - 2; ++d)
    LF_CHECK((a.size(d) == c.size(d) || a.size(d) == 1) && (b.size(d) == c.size(d) || b.size(d) == 1),
             "matmul batch axis {} of {} · {} -> {}", d, a.shape().str(), b.shape().str(), c.shape().str());
  if (c.numel() == 0) return false;
  if (k == 0) {
    LF_CHECK(mode == Accumulate::add && bias == nullptr, "matmul with an empty inner axis");
    return false;
  }
  return true;
}
}  // namespace

void matmul(TensorView<const float> a, TensorView<const float> b, TensorView<float> c, Accumulate mode,
            const float* bias) {
  if (!check_matmul(a, b, c, mode, bias)) return;
  const int rank = c.rank();
  const int64_t m = a.size(rank - 2), k = a.size(rank - 1), n = b.size(rank - 1);
  if (bf16_operands.load(std::memory_order_relaxed)) {
    matmul(convert_to_bf16(a, bf16_scratch(kBf16A, a.numel())), convert_to_bf16(b, bf16_scratch(kBf16B, b.numel())), c,
           mode, bias);
    return;
  }
  const KernelTimer timer(KernelKind::matmul, 2.0 * static_cast<double>(c.numel()) * static_cast<double>(k));
  if (computes_transposed(a, b, c, bias)) {
    const TensorView<float> t(transposed_scratch(m * n), Shape{n, m});
    run_primitive(b.transpose(0, 1), a.transpose(0, 1), t, Accumulate::overwrite, nullptr);
    write_transposed(t.data(), c, mode);
    return;
  }
  run_primitive(a, b, c, mode, bias);
}

void matmul(TensorView<const bf16> a, TensorView<const bf16> b, TensorView<float> c, Accumulate mode,
            const float* bias) {
  LF_CHECK(cpu_has_bf16(), "a bf16 matmul needs a CPU with avx512_bf16 (oneDNN's ISA here: {})", dnnl_cpu_isa_name());
  if (!check_matmul(a, b, c, mode, bias)) return;
  const int64_t k = a.size(c.rank() - 1);
  const KernelTimer timer(KernelKind::matmul, 2.0 * static_cast<double>(c.numel()) * static_cast<double>(k));
  run_primitive(a, b, c, mode, bias);
}

void matmul(TensorView<const bf16> a, TensorView<const bf16> b, TensorView<bf16> c, const float* bias) {
  LF_CHECK(cpu_has_bf16(), "a bf16 matmul needs a CPU with avx512_bf16 (oneDNN's ISA here: {})", dnnl_cpu_isa_name());
  if (!check_matmul(a, b, c, Accumulate::overwrite, bias)) return;
  const int64_t k = a.size(c.rank() - 1);
  const KernelTimer timer(KernelKind::matmul, 2.0 * static_cast<double>(c.numel()) * static_cast<double>(k));
  run_primitive(a, b, c, Accumulate::overwrite, bias);
}

void matmul(TensorView<const float> a, TensorView<const bf16> b, TensorView<float> c, Accumulate mode,
            const float* bias) {
  matmul(convert_to_bf16(a, bf16_scratch(kBf16A, a.numel())), b, c, mode, bias);
}

void matmul(TensorView<const bf16> a, TensorView<const float> b, TensorView<float> c, Accumulate mode,
            const float* bias) {
  matmul(a, convert_to_bf16(b, bf16_scratch(kBf16B, b.numel())), c, mode, bias);
}

void set_matmul_bf16_operands(bool on) {
  LF_CHECK(!on || cpu_has_bf16(), "bf16 matmul operands: needs a CPU with avx512_bf16 (oneDNN's ISA here: {})",
           dnnl_cpu_isa_name());
  bf16_operands.store(on);
}

bool matmul_bf16_operands() { return bf16_operands.load(); }

void set_matmul_packed_weights(bool on) { packed_weights_on.store(on); }

std::map<std::string, size_t> matmul_implementations() {
  auto& cc = cache();
  std::lock_guard<std::mutex> lock(cc.mutex);
  return cc.implementations;
}

size_t matmul_primitives_built() {
  auto& cc = cache();
  std::lock_guard<std::mutex> lock(cc.mutex);
  return cc.primitives.size();
}

}  // namespace linformer

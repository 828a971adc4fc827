// oneDNN 2.6 f32 matmul speed against operand placement and orientation, straight on the
// oneDNN API (no project code), for the shapes of a training step's weight gradients.
// Build and run (Debian 12, libdnnl-dev):
//   g++ -O2 -std=c++17 results/2026-11-22_matmul_quirks/matmul_quirks.cpp -ldnnl -o /tmp/matmul_quirks
//   /tmp/matmul_quirks
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

using dnnl::memory;

struct Buffer {  // page-aligned storage; data() starts `skew` floats past the page
  explicit Buffer(size_t n) : base(static_cast<float*>(std::aligned_alloc(4096, (n * 4 + 8192) / 4096 * 4096))) {
    for (size_t i = 0; i < n + 1024; ++i) base[i] = 0.01f * static_cast<float>(i % 13);
  }
  ~Buffer() { std::free(base); }
  float* at(size_t skew) const { return base + skew; }
  float* base;
};

// Median GFLOP/s of one execution of `mm` on these buffers.
double gflops(dnnl::engine& eng, dnnl::stream& s, dnnl::matmul& mm, const memory::desc& a_md, const memory::desc& b_md,
              const memory::desc& c_md, float* a, float* b, float* c, double flops) {
  memory am(a_md, eng, a), bm(b_md, eng, b), cm(c_md, eng, c);
  auto run = [&] {
    const auto start = std::chrono::steady_clock::now();
    mm.execute(s, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
    s.wait();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  // Warm up for 0.4 s: on this VM fresh buffers run slowly for the first few hundred ms.
  for (double warm = 0; warm < 0.4;) warm += run();
  std::vector<double> t;
  for (int r = 0; r < 7; ++r) t.push_back(run());
  std::sort(t.begin(), t.end());
  return flops / t[3] * 1e-9;
}

// Median GFLOP/s of C (m, n) += Aᵀ·B with A stored (k, m), B stored (k, n), C row-major.
double tn_gflops(dnnl::engine& eng, dnnl::stream& s, int64_t m, int64_t n, int64_t k, float* a, float* b, float* c) {
  const memory::desc a_md({m, k}, memory::data_type::f32, {1, m});
  const memory::desc b_md({k, n}, memory::data_type::f32, {n, 1});
  const memory::desc c_md({m, n}, memory::data_type::f32, {n, 1});
  dnnl::post_ops ops;
  ops.append_sum(1.0f);
  dnnl::primitive_attr attr;
  attr.set_post_ops(ops);
  dnnl::matmul mm(dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, b_md, c_md), attr, eng));
  return gflops(eng, s, mm, a_md, b_md, c_md, a, b, c, 2.0 * m * n * k);
}

// Median GFLOP/s of C (m, n) = A·B with A (m, k) row-major and B (k, n) row-major or, when
// b_transposed, stored (n, k) (a Linear layer's forward x·Wᵀ).
double nn_gflops(dnnl::engine& eng, dnnl::stream& s, int64_t m, int64_t n, int64_t k, bool b_transposed, float* a,
                 float* b, float* c) {
  const memory::desc a_md({m, k}, memory::data_type::f32, {k, 1});
  const memory::desc b_md({k, n}, memory::data_type::f32, b_transposed ? memory::dims{1, k} : memory::dims{n, 1});
  const memory::desc c_md({m, n}, memory::data_type::f32, {n, 1});
  dnnl::matmul mm(dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, b_md, c_md), eng));
  return gflops(eng, s, mm, a_md, b_md, c_md, a, b, c, 2.0 * m * n * k);
}

int main() {
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  const int64_t k = 4096;  // rows of a batch: 8 sequences × 512 tokens

  std::printf("1. C += Aᵀ·B, k = %ld: GFLOP/s against where B starts (bytes past a 4 KiB page)\n", k);
  std::printf("%6s %6s", "m", "n");
  const std::vector<size_t> skews = {0, 4, 8, 16, 64, 512};  // floats
  for (size_t skew : skews) std::printf(" %6zuB", skew * 4);
  std::printf("\n");
  for (auto [m, n] : std::vector<std::pair<int64_t, int64_t>>{{256, 1024}, {256, 256}, {1024, 256}, {768, 256}}) {
    Buffer a(k * m), b(k * n), c(m * n);
    std::printf("%6ld %6ld", m, n);
    for (size_t skew : skews) std::printf(" %7.0f", tn_gflops(eng, s, m, n, k, a.at(0), b.at(skew), c.at(0)));
    std::printf("\n");
  }

  std::printf("\n2. C (m, n) += Aᵀ·B against the transposed product Cᵀ (n, m) = Bᵀ·A, B 16 bytes past a page\n");
  std::printf("%6s %6s %6s %8s %11s\n", "k", "m", "n", "C=AᵀB", "Cᵀ=BᵀA");
  for (int64_t kk : {1024, 4096, 16384})
    for (int64_t m : {256, 512, 768, 1024, 2048})
      for (int64_t n : {64, 256, 512, 1024}) {
        if (n > m) continue;
        Buffer a(kk * m), b(kk * n), c(m * n);
        const double direct = tn_gflops(eng, s, m, n, kk, a.at(4), b.at(4), c.at(4));
        const double swapped = tn_gflops(eng, s, n, m, kk, b.at(4), a.at(4), c.at(4));
        std::printf("%6ld %6ld %6ld %8.0f %11.0f%s\n", kk, m, n, direct, swapped,
                    n <= 256 && m >= std::max<int64_t>(2 * n, 512) && kk >= m ? "   <- matmul() computes Cᵀ" : "");
      }

  std::printf("\n3. Forward (x·Wᵀ) and input-gradient (dy·W) products: GFLOP/s with A and B at 0 or 16 bytes past a page\n");
  std::printf("%-34s %8s %8s %8s %8s\n", "", "A0 B0", "A0 B16", "A16 B0", "A16 B16");
  struct Product {
    const char* name;
    int64_t m, k, n;
    bool b_transposed;
  };
  for (const Product& p : std::vector<Product>{{"fc1 forward 4096x256 . 256x1024", 4096, 256, 1024, true},
                                               {"fc2 forward 4096x1024 . 1024x256", 4096, 1024, 256, true},
                                               {"fc2 input grad 4096x256 . 256x1024", 4096, 256, 1024, false},
                                               {"fc1 input grad 4096x1024 . 1024x256", 4096, 1024, 256, false},
                                               {"MLM head 587x256 . 256x8000", 587, 256, 8000, true}}) {
    Buffer a(p.m * p.k), b(p.k * p.n), c(p.m * p.n);
    std::printf("%-34s", p.name);
    for (size_t sa : {0, 4})
      for (size_t sb : {0, 4}) std::printf(" %8.0f", nn_gflops(eng, s, p.m, p.n, p.k, p.b_transposed, a.at(sa), b.at(sb), c.at(0)));
    std::printf("\n");
  }
  return 0;
}

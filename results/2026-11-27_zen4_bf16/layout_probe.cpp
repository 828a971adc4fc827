// Which oneDNN 2.6 kernel runs a batched bf16 attention product, by operand layout, and how fast.
#include <dnnl.hpp>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>
#include <algorithm>
using namespace dnnl;
using dt = memory::data_type;
using dims = memory::dims;

// strides for a logical (B,H,R,C) tensor stored with the axis order `order` (e.g. "acbd" = B,T,H,D)
dims strides_for(const dims& d, const std::string& order, int64_t row_pad = 0) {
  // order lists axes outermost first
  dims s(4);
  int64_t stride = 1;
  for (int i = 3; i >= 0; --i) {
    int ax = order[i] - 'a';
    s[ax] = stride;
    stride *= d[ax] + ((i == 2 && row_pad) ? row_pad : 0);
  }
  return s;
}

void run_s(const char* name, dims ad, dims as, dims bd, dims bs, dims cd, dims cs, dt cdt);
void run(const char* name, dims ad, std::string ao, dims bd, std::string bo, dims cd, std::string co, dt cdt) {
  run_s(name, ad, strides_for(ad, ao), bd, strides_for(bd, bo), cd, strides_for(cd, co), cdt);
}
void run_s(const char* name, dims ad, dims as, dims bd, dims bs, dims cd, dims cs, dt cdt) {
  engine eng(engine::kind::cpu, 0);
  stream st(eng);
  memory::desc a(ad, dt::bf16, as), b(bd, dt::bf16, bs), c(cd, cdt, cs);
  matmul::primitive_desc pd(matmul::desc(a, b, c), eng);
  std::vector<uint16_t> A(a.get_size() / 2, 0x3f80), B(b.get_size() / 2, 0x3f80);
  std::vector<char> C(c.get_size());
  memory am(a, eng, A.data()), bm(b, eng, B.data()), cm(c, eng, C.data());
  matmul p(pd);
  std::vector<double> t;
  for (int i = 0; i < 25; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    p.execute(st, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
    st.wait();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin() + 5, t.end());
  double med = t[15];
  double flops = 2.0 * cd[0] * cd[1] * cd[2] * cd[3] * ad[3];
  printf("%-34s %-24s %7.3f ms %6.0f GFLOP/s\n", name, pd.impl_info_str(), med * 1e3, flops / med / 1e9);
}

int main() {
  const int64_t B = 8, H = 4, T = 512, D = 64;
  dims q{B, H, T, D}, kt{B, H, D, T}, s{B, H, T, T}, v{B, H, T, D};
  // scores = Q K^T: Q from the fused (B,T,3C) buffer is "acbd" with a wider row; here dense acbd/abcd
  run("QK^T  Q acbd, K^T adbc, S bf16", q, "acbd", kt, "adbc", s, "abcd", dt::bf16);
  run("QK^T  Q abcd, K^T abdc, S bf16", q, "abcd", kt, "abdc", s, "abcd", dt::bf16);
  run("QK^T  Q abcd, K^T abcd, S bf16", q, "abcd", kt, "abcd", s, "abcd", dt::bf16);
  run("PV    P abcd, V acbd, ctx acbd bf16", s, "abcd", v, "acbd", v, "acbd", dt::bf16);
  run("PV    P abcd, V abcd, ctx abcd bf16", s, "abcd", v, "abcd", v, "abcd", dt::bf16);
  run("PV    P abcd, V abcd, ctx acbd bf16", s, "abcd", v, "abcd", v, "acbd", dt::bf16);
  run("P^T dctx P abdc, dctx acbd, f32 acbd", s, "abdc", v, "acbd", v, "acbd", dt::f32);
  run("P^T dctx P abdc, dctx abcd, f32 abcd", s, "abdc", v, "abcd", v, "abcd", dt::f32);
  run("dS K  dS abcd, K acbd, f32 acbd", s, "abcd", v, "acbd", v, "acbd", dt::f32);
  run("dS K  dS abcd, K abcd, f32 abcd", s, "abcd", v, "abcd", v, "abcd", dt::f32);
  // The real case: Q and K head views of the fused (B, T, 3C) bf16 buffer (row stride 3C).
  const int64_t C = H * D;
  run_s("QK^T  fused qkv views, S bf16", q, dims{T * 3 * C, D, 3 * C, 1}, kt, dims{T * 3 * C, D, 1, 3 * C}, s, dims{H * T * T, T * T, T, 1}, dt::bf16);
  run_s("PV    V fused view, ctx acbd bf16", s, dims{H * T * T, T * T, T, 1}, v, dims{T * 3 * C, D, 3 * C, 1}, v, dims{T * C, D, C, 1}, dt::bf16);
  // Linformer (k = 128): Q dense (B,T,C); K~, V~ from the (B,K,2C) buffer (row stride 2C) or dense (B,K,C).
  {
    const int64_t K = 128;
    dims kk{B, H, D, K}, sl{B, H, T, K}, vv{B, H, K, D};
    dims q_s{T * C, D, C, 1}, s_s{H * T * K, T * K, K, 1};
    run_s("lin QK~^T K~ stride 2C, S bf16", q, q_s, kk, dims{K * 2 * C, D, 1, 2 * C}, sl, s_s, dt::bf16);
    run_s("lin QK~^T K~ dense C, S bf16", q, q_s, kk, dims{K * C, D, 1, C}, sl, s_s, dt::bf16);
    run_s("lin QK~^T K~ head-major, S bf16", q, q_s, kk, dims{H * K * D, K * D, 1, D}, sl, s_s, dt::bf16);
    run_s("lin PV~ V~ stride 2C, ctx bf16", sl, s_s, vv, dims{K * 2 * C, D, 2 * C, 1}, q, q_s, dt::bf16);
    run_s("lin PV~ V~ dense C, ctx bf16", sl, s_s, vv, dims{K * C, D, C, 1}, q, q_s, dt::bf16);
    run_s("lin PV~ V~ head-major, ctx bf16", sl, s_s, vv, dims{H * K * D, K * D, D, 1}, q, q_s, dt::bf16);
    run_s("lin dS K~ K~ stride 2C, dQ f32", sl, s_s, vv, dims{K * 2 * C, D, 2 * C, 1}, q, q_s, dt::f32);
    run_s("lin dS K~ K~ dense C, dQ f32", sl, s_s, vv, dims{K * C, D, C, 1}, q, q_s, dt::f32);
    dims slt{B, H, K, T};
    run_s("lin dS^T Q  dK~ stride 2C f32", slt, dims{H * T * K, T * K, 1, K}, q, q_s, vv, dims{K * 2 * C, D, 2 * C, 1}, dt::f32);
    run_s("lin dS^T Q  dK~ dense f32", slt, dims{H * T * K, T * K, 1, K}, q, q_s, vv, dims{K * C, D, C, 1}, dt::f32);
    run_s("lin dP = dctx V~^T stride 2C bf16", q, q_s, kk, dims{K * 2 * C, D, 1, 2 * C}, sl, s_s, dt::bf16);
  }
  // Weight gradients dW = dyᵀ x: the src transposed in memory ("ba", as the step runs them) or copied dense.
  for (auto mnk : {std::vector<int64_t>{256, 1024, 4096}, {1024, 256, 4096}, {768, 256, 4096}, {256, 256, 4096}}) {
    const int64_t m = mnk[0], n = mnk[1], k = mnk[2];
    char name[64];
    snprintf(name, sizeof name, "dW %ldx%ld, K %ld, src ba", (long)m, (long)n, (long)k);
    run_s(name, dims{1, 1, m, k}, dims{m * k, m * k, 1, m}, dims{1, 1, k, n}, dims{k * n, k * n, n, 1}, dims{1, 1, m, n}, dims{m * n, m * n, n, 1}, dt::f32);
    snprintf(name, sizeof name, "dW %ldx%ld, K %ld, src ab", (long)m, (long)n, (long)k);
    run_s(name, dims{1, 1, m, k}, dims{m * k, m * k, k, 1}, dims{1, 1, k, n}, dims{k * n, k * n, n, 1}, dims{1, 1, m, n}, dims{m * n, m * n, n, 1}, dt::f32);
  }
  run("2D 4096x256x1024 (reference)", dims{1, 1, 4096, 256}, "abcd", dims{1, 1, 256, 1024}, "abcd", dims{1, 1, 4096, 1024}, "abcd", dt::f32);
}

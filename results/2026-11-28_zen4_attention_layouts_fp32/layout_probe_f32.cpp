// M's Linformer attention products in fp32 (B 8, H 8, n 512, dh 64, k 128): which kernel, how fast,
// Build and run: g++ -O2 -std=c++17 layout_probe_f32.cpp -o layout_probe_f32 -ldnnl && OMP_NUM_THREADS=2 ./layout_probe_f32 8
// by operand layout. Logical 4-D (B,H,R,C); the order string lists storage axes outermost first.
#include <dnnl.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>
using namespace dnnl;
using dt = memory::data_type;
using dims = memory::dims;

dims strides_for(const dims& d, const std::string& order) {
  dims s(4);
  int64_t stride = 1;
  for (int i = 3; i >= 0; --i) {
    int ax = order[i] - 'a';
    s[ax] = stride;
    stride *= d[ax];
  }
  return s;
}

void run(const char* name, dims ad, std::string ao, dims bd, std::string bo, dims cd, std::string co) {
  engine eng(engine::kind::cpu, 0);
  stream st(eng);
  memory::desc a(ad, dt::f32, strides_for(ad, ao)), b(bd, dt::f32, strides_for(bd, bo)), c(cd, dt::f32, strides_for(cd, co));
  matmul::primitive_desc pd(matmul::desc(a, b, c), eng);
  std::vector<float> A(a.get_size() / 4, 1.0f), B(b.get_size() / 4, 1.0f), C(c.get_size() / 4);
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
  printf("%-44s %-20s %7.3f ms %6.0f GFLOP/s\n", name, pd.impl_info_str(), med * 1e3, flops / med / 1e9);
}

int main(int argc, char** argv) {
  const int64_t B = 8, H = argc > 1 ? std::stoi(argv[1]) : 8, T = 512, D = 64, K = 128;
  dims q{B, H, T, D}, qt{B, H, D, T}, kt{B, H, D, K}, kk{B, H, K, D}, s{B, H, T, K}, st{B, H, K, T};
  dims dkt{B, H, D, K};
  // step layouts: Q, ctx, dQ, d_ctx = head views of (B,T,C) -> acbd; K~, V~ of (B,K,C) -> acbd
  run("scores Q acbd . Kt adbc -> abcd (step)", q, "acbd", kt, "adbc", s, "abcd");
  run("scores Q abcd . Kt abdc -> abcd", q, "abcd", kt, "abdc", s, "abcd");
  run("scores Q acbd . Kt abdc -> abcd", q, "acbd", kt, "abdc", s, "abcd");
  run("PV P abcd . V acbd -> acbd (step)", s, "abcd", kk, "acbd", q, "acbd");
  run("PV P abcd . V abcd -> acbd", s, "abcd", kk, "abcd", q, "acbd");
  run("PV P abcd . V abcd -> abcd", s, "abcd", kk, "abcd", q, "abcd");
  run("dQ dS abcd . K acbd -> acbd (step)", s, "abcd", kk, "acbd", q, "acbd");
  run("dQ dS abcd . K abcd -> acbd", s, "abcd", kk, "abcd", q, "acbd");
  run("dK dSt abdc . Q acbd -> acbd (step)", st, "abdc", q, "acbd", kk, "acbd");
  run("dK dSt abdc . Q acbd -> abcd", st, "abdc", q, "acbd", kk, "abcd");
  run("dK dSt abdc . Q abcd -> abcd", st, "abdc", q, "abcd", kk, "abcd");
  run("dK dense dSt abcd . Q acbd -> acbd", st, "abcd", q, "acbd", kk, "acbd");
  run("dKt Qt adbc . dS abcd -> dKt adbc", qt, "adbc", s, "abcd", dkt, "adbc");
  run("dKt Qt abdc(head-major) . dS abcd -> abcd", qt, "abdc", s, "abcd", dkt, "abcd");
  return 0;
}

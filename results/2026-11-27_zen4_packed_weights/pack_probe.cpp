// Zen 4 probe: B (the weights operand) reordered into the primitive's preferred layout before each
// product, timing reorder + product, against the plain product. bf16 and f32.
#include <dnnl.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>
#include <algorithm>
using namespace dnnl;
using dt = memory::data_type;
using dims = memory::dims;
engine eng(engine::kind::cpu, 0);
stream st(eng);

double med_of(std::vector<double>& t) { std::sort(t.begin() + 5, t.end()); return t[5 + (t.size() - 5) / 2]; }

void run(const char* name, int64_t M, int64_t K, int64_t N, bool at, bool bt, dt type) {
  const size_t es = type == dt::bf16 ? 2 : 4;
  memory::desc a({M, K}, type, at ? dims{1, M} : dims{K, 1});
  memory::desc b({K, N}, type, bt ? dims{1, K} : dims{N, 1});
  memory::desc c({M, N}, dt::f32, dims{N, 1});
  std::mt19937 g(1);
  std::vector<char> A(M * K * es), B(K * N * es);
  for (auto& v : A) v = char(g() % 7 + 60);
  for (auto& v : B) v = char(g() % 7 + 60);
  memory am(a, eng, A.data()), bm(b, eng, B.data()), cm(c, eng), cm2(c, eng);
  matmul::primitive_desc pd_plain(matmul::desc(a, b, c), eng);
  matmul plain(pd_plain);
  matmul::primitive_desc pd_any(matmul::desc(a, memory::desc({K, N}, type, memory::format_tag::any), c), eng);
  matmul packed(pd_any);
  memory bp(pd_any.weights_desc(), eng);
  reorder pack(bm, bp);
  std::vector<double> t0, t1, tr;
  for (int i = 0; i < 31; ++i) {
    auto s0 = std::chrono::steady_clock::now();
    plain.execute(st, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
    st.wait();
    auto s1 = std::chrono::steady_clock::now();
    pack.execute(st, bm, bp);
    st.wait();
    auto s2 = std::chrono::steady_clock::now();
    packed.execute(st, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bp}, {DNNL_ARG_DST, cm2}});
    st.wait();
    auto s3 = std::chrono::steady_clock::now();
    t0.push_back(std::chrono::duration<double>(s1 - s0).count());
    tr.push_back(std::chrono::duration<double>(s2 - s1).count());
    t1.push_back(std::chrono::duration<double>(s3 - s1).count());
  }
  const bool same = memcmp(cm.get_data_handle(), cm2.get_data_handle(), M * N * 4) == 0;
  const double m0 = med_of(t0), m1 = med_of(t1), mr = med_of(tr), fl = 2.0 * M * N * K;
  printf("%-5s %-22s %5ldx%5ldx%5ld A%s B%s  plain %-22s %6.3f ms %4.0f | packed %-22s %6.3f ms (reorder %5.3f) %4.0f GF/s  x%.3f %s\n",
         type == dt::bf16 ? "bf16" : "f32", name, (long)M, (long)K, (long)N, at ? "ba" : "ab", bt ? "ba" : "ab",
         pd_plain.impl_info_str(), m0 * 1e3, fl / m0 / 1e9, pd_any.impl_info_str(), m1 * 1e3, mr * 1e3, fl / m1 / 1e9,
         m0 / m1, same ? "bit-equal" : "DIFFERENT");
}

int main() {
  setvbuf(stdout, nullptr, _IONBF, 0);
  for (dt type : {dt::bf16, dt::f32}) {
    run("fc1 fwd", 4096, 256, 1024, false, true, type);
    run("fc2 fwd", 4096, 1024, 256, false, true, type);
    run("proj fwd", 4096, 256, 256, false, true, type);
    run("in_proj fwd", 4096, 256, 768, false, true, type);
    run("decoder fwd", 608, 256, 8000, false, true, type);
    run("fc1 dX", 4096, 1024, 256, false, false, type);
    run("fc2 dX", 4096, 256, 1024, false, false, type);
    run("proj dX", 4096, 256, 256, false, false, type);
    run("decoder dX", 608, 8000, 256, false, false, type);
    run("fc1 dW", 1024, 4096, 256, true, false, type);
    run("fc2 dW", 256, 4096, 1024, true, false, type);
    run("proj dW", 256, 4096, 256, true, false, type);
    run("decoder dW", 8000, 608, 256, true, false, type);
    run("M fc1 fwd", 4096, 512, 2048, false, true, type);
    run("M fc2 fwd", 4096, 2048, 512, false, true, type);
    run("M proj fwd", 4096, 512, 512, false, true, type);
    run("M fc1 dX", 4096, 2048, 512, false, false, type);
    run("M fc2 dX", 4096, 512, 2048, false, false, type);
  }
}

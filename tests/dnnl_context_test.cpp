// The oneDNN context works: a small matmul on its engine and stream matches a naive loop.

#include "linformer/kernels/context.h"

#include <gtest/gtest.h>

#include <vector>

namespace linformer {
namespace {

TEST(DnnlContext, RunsAMatmulThatMatchesANaiveLoop) {
  using tag = dnnl::memory::format_tag;
  using dt = dnnl::memory::data_type;
  const int m = 3, k = 5, n = 4;
  std::vector<float> a(m * k), b(k * n), c(m * n), expected(m * n, 0.0f);
  for (int i = 0; i < m * k; ++i) a[i] = 0.25f * static_cast<float>(i % 7) - 0.5f;
  for (int i = 0; i < k * n; ++i) b[i] = 0.125f * static_cast<float>(i % 5) + 0.1f;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j)
      for (int p = 0; p < k; ++p) expected[i * n + j] += a[i * k + p] * b[p * n + j];

  auto& ctx = DnnlContext::get();
  const dnnl::memory::desc a_md({m, k}, dt::f32, tag::ab), b_md({k, n}, dt::f32, tag::ab),
      c_md({m, n}, dt::f32, tag::ab);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), ctx.engine());
  dnnl::memory a_mem(a_md, ctx.engine(), a.data()), b_mem(b_md, ctx.engine(), b.data()),
      c_mem(c_md, ctx.engine(), c.data());
  dnnl::matmul(pd).execute(ctx.stream(), {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, c_mem}});
  ctx.stream().wait();
  for (int i = 0; i < m * n; ++i) EXPECT_NEAR(c[i], expected[i], 1e-5f) << "element " << i;
}

TEST(DnnlContext, ReportsVersionAndIsa) {
  EXPECT_EQ(dnnl_version_string().rfind("2.", 0), 0u) << dnnl_version_string();
  EXPECT_NE(dnnl_cpu_isa_name(), "unknown");
}

}  // namespace
}  // namespace linformer

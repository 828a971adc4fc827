// Each kernel against a naive loop written out here in double precision.

#include "linformer/core/rng.h"
#include "linformer/kernels/activation.h"
#include "linformer/kernels/bf16.h"
#include "linformer/kernels/context.h"
#include "linformer/kernels/cross_entropy.h"
#include "linformer/kernels/dropout.h"
#include "linformer/kernels/kernel_timing.h"
#include "linformer/kernels/layer_norm_rows.h"
#include "linformer/kernels/matmul.h"
#include "linformer/kernels/reduce.h"
#include "linformer/kernels/softmax.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace linformer {
namespace {

std::vector<float> random_vector(size_t n, uint64_t seed, float scale = 1.0f) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = scale * rng.normal();
  return v;
}

TEST(Matmul, PlainBiasAndAccumulate) {
  const int64_t M = 7, K = 13, N = 5;
  auto a = random_vector(M * K, 1), b = random_vector(K * N, 2), bias = random_vector(N, 3);
  std::vector<float> c(M * N, 100.0f);
  matmul(TensorView<const float>(a.data(), Shape{M, K}), TensorView<const float>(b.data(), Shape{K, N}),
         TensorView<float>(c.data(), Shape{M, N}), Accumulate::overwrite, bias.data());
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double ref = bias[j];
      for (int64_t p = 0; p < K; ++p) ref += static_cast<double>(a[i * K + p]) * b[p * N + j];
      ASSERT_NEAR(c[i * N + j], ref, 1e-4) << i << "," << j;
    }
  const std::vector<float> before = c;
  matmul(TensorView<const float>(a.data(), Shape{M, K}), TensorView<const float>(b.data(), Shape{K, N}),
         TensorView<float>(c.data(), Shape{M, N}), Accumulate::add);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double ref = before[i * N + j];
      for (int64_t p = 0; p < K; ++p) ref += static_cast<double>(a[i * K + p]) * b[p * N + j];
      ASSERT_NEAR(c[i * N + j], ref, 1e-4);
    }
}

TEST(Matmul, TransposedStridedAndBroadcastBatches) {
  // c[b, h] (M, N) = a[0, h] (M, K) · b[b, h]ᵀ where b is stored (B, N, H, K): a head slice, transposed.
  const int64_t B = 3, H = 2, M = 4, K = 6, N = 5;
  auto a = random_vector(H * M * K, 4), bt = random_vector(B * N * H * K, 5);
  std::vector<float> c(B * H * M * N);
  const TensorView<const float> av(a.data(), Shape{1, H, M, K});
  const TensorView<const float> bv(bt.data(), Shape{B, H, K, N}, Shape{N * H * K, K, 1, H * K});
  matmul(av, bv, TensorView<float>(c.data(), Shape{B, H, M, N}));
  for (int64_t bb = 0; bb < B; ++bb)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          double ref = 0;
          for (int64_t p = 0; p < K; ++p)
            ref += static_cast<double>(a[(h * M + i) * K + p]) * bt[((bb * N + j) * H + h) * K + p];
          ASSERT_NEAR(c[((bb * H + h) * M + i) * N + j], ref, 1e-4);
        }
}

TEST(Matmul, TallNarrowTransposedProductIntoAStridedOutput) {
  // c (M, N) = aᵀ · b with a stored (K, M): a weight gradient dyᵀx of a widening layer. Where the
  // AVX2 sgemm runs (matmul_runs_avx2_sgemm), these sizes take the transposed-scratch path.
  const int64_t K = 600, M = 520, N = 30, ldc = N + 3;
  auto a = random_vector(K * M, 6), b = random_vector(K * N, 7);
  std::vector<float> c(M * ldc, 100.0f);
  const TensorView<const float> at = TensorView<const float>(a.data(), Shape{K, M}).transpose(0, 1);
  const TensorView<const float> bv(b.data(), Shape{K, N});
  const TensorView<float> cv(c.data(), Shape{M, N}, Shape{ldc, 1});
  auto check = [&](double base) {
    for (int64_t i = 0; i < M; ++i) {
      for (int64_t j = 0; j < N; ++j) {
        double ref = base;
        for (int64_t p = 0; p < K; ++p) ref += static_cast<double>(a[p * M + i]) * b[p * N + j];
        ASSERT_NEAR(c[i * ldc + j], ref, 1e-3) << i << "," << j;
      }
      for (int64_t j = N; j < ldc; ++j) ASSERT_EQ(c[i * ldc + j], 100.0f) << "padding written at " << i << "," << j;
    }
  };
  matmul(at, bv, cv);
  check(0.0);
  std::fill(c.begin(), c.end(), 100.0f);
  matmul(at, bv, cv, Accumulate::add);
  check(100.0);
}

size_t packed_weight_primitives() {
  size_t n = 0;
  for (const auto& [name, count] : matmul_implementations())
    if (name.find("(packed weights)") != std::string::npos) n += count;
  return n;
}

// A tall product (m ≥ 2k, a Linear over a batch of tokens) reorders its weights operand into the
// kernel's blocked layout before it runs: the same bits as the plain product, in every form the
// layers use (weights read transposed or not, bias, accumulate, bf16 operands, bf16 result), and
// a double product's value.
TEST(Matmul, TallProductsPackTheirWeightsToTheSameBitsAsThePlainProduct) {
  const int64_t M = 300, K = 64, N = 48;
  struct PackingBackOn {
    ~PackingBackOn() { set_matmul_packed_weights(true); }
  } restore;
  const auto a = random_vector(M * K, 11), w = random_vector(N * K, 12), bias = random_vector(N, 13);
  std::vector<bf16> a16(a.size()), w16(w.size());
  for (size_t i = 0; i < a.size(); ++i) a16[i] = to_bf16(a[i]);
  for (size_t i = 0; i < w.size(); ++i) w16[i] = to_bf16(w[i]);
  const Shape mk{M, K}, mn{M, N};
  // Every product's result bits, one after another.
  auto products = [&](bool packed) {
    set_matmul_packed_weights(packed);
    std::vector<float> out;
    auto keep = [&](const std::vector<float>& c) { out.insert(out.end(), c.begin(), c.end()); };
    std::vector<float> c(M * N, 0.5f), d(M * K);
    const TensorView<const float> wt = TensorView<const float>(w.data(), Shape{N, K}).transpose(0, 1);
    matmul(TensorView<const float>(a.data(), mk), wt, TensorView<float>(c.data(), mn), Accumulate::overwrite,
           bias.data());
    keep(c);
    matmul(TensorView<const float>(a.data(), mk), wt, TensorView<float>(c.data(), mn), Accumulate::add);
    keep(c);
    matmul(TensorView<const float>(c.data(), mn), TensorView<const float>(w.data(), Shape{N, K}),
           TensorView<float>(d.data(), mk));  // dx = dy W: the weights read as stored
    keep(d);
    if (cpu_has_bf16()) {
      const TensorView<const bf16> w16t = TensorView<const bf16>(w16.data(), Shape{N, K}).transpose(0, 1);
      matmul(TensorView<const bf16>(a16.data(), mk), w16t, TensorView<float>(c.data(), mn), Accumulate::add,
             bias.data());
      keep(c);
      std::vector<bf16> c16(M * N);
      matmul(TensorView<const bf16>(a16.data(), mk), w16t, TensorView<bf16>(c16.data(), mn), bias.data());
      for (bf16 x : c16) out.push_back(to_float(x));
    }
    return out;
  };
  const size_t built_before = matmul_primitives_built(), packed_before = packed_weight_primitives();
  const std::vector<float> packed = products(true);
  // New primitives (not the first run's, on --gtest_repeat) are packed ones.
  const bool built_now = matmul_primitives_built() > built_before;
  const size_t packed_now = packed_weight_primitives() - packed_before;
  const std::vector<float> plain = products(false);
  ASSERT_EQ(packed.size(), plain.size());
  ASSERT_EQ(std::memcmp(packed.data(), plain.data(), packed.size() * sizeof(float)), 0)
      << "a product with packed weights differs from the plain one";
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double ref = bias[j];
      for (int64_t p = 0; p < K; ++p) ref += static_cast<double>(a[i * K + p]) * w[j * K + p];
      ASSERT_NEAR(packed[i * N + j], ref, 1e-4) << i << "," << j;
    }
  if (matmul_runs_avx2_sgemm())
    GTEST_SKIP() << "AVX2 only (oneDNN ISA " << dnnl_cpu_isa_name()
                 << "): its sgemm takes no blocked weights, both runs were plain products";
  if (built_now) {
    EXPECT_GE(packed_now, 3u) << "the tall products did not pack their weights";
  }
}

TEST(Matmul, ReusesPrimitivesAndRejectsMismatches) {
  auto a = random_vector(6, 1), b = random_vector(6, 2);
  std::vector<float> c(4);
  const TensorView<const float> av(a.data(), Shape{2, 3}), bv(b.data(), Shape{3, 2});
  matmul(av, bv, TensorView<float>(c.data(), Shape{2, 2}));
  const size_t built = matmul_primitives_built();
  for (int i = 0; i < 3; ++i) matmul(av, bv, TensorView<float>(c.data(), Shape{2, 2}));
  EXPECT_EQ(matmul_primitives_built(), built);
  EXPECT_THROW(matmul(av, av, TensorView<float>(c.data(), Shape{2, 2})), Error);
}

TEST(KernelTiming, CountsCallsTimeAndMatmulFlopsOnlyWhileEnabled) {
  auto a = random_vector(6 * 4, 1), b = random_vector(4 * 5, 2), x = random_vector(100, 3);
  std::vector<float> c(6 * 5), y(100);
  const TensorView<const float> av(a.data(), Shape{6, 4}), bv(b.data(), Shape{4, 5});
  reset_kernel_timing();
  matmul(av, bv, TensorView<float>(c.data(), Shape{6, 5}));  // disabled: not counted
  enable_kernel_timing(true);
  matmul(av, bv, TensorView<float>(c.data(), Shape{6, 5}));
  matmul(av, bv, TensorView<float>(c.data(), Shape{6, 5}));
  gelu_forward(x.data(), y.data(), 100);
  {
    const KernelTimer outer(KernelKind::dropout);
    gelu_forward(x.data(), y.data(), 100);  // inside another timed kernel: counts towards it
  }
  enable_kernel_timing(false);
  const auto t = kernel_timing();
  const auto& mm = t[static_cast<int>(KernelKind::matmul)];
  EXPECT_EQ(mm.calls, 2);
  EXPECT_DOUBLE_EQ(mm.flops, 2 * (2.0 * 6 * 5 * 4));
  EXPECT_GT(mm.seconds, 0.0);
  EXPECT_EQ(t[static_cast<int>(KernelKind::gelu)].calls, 1);
  EXPECT_EQ(t[static_cast<int>(KernelKind::dropout)].calls, 1);
  EXPECT_EQ(t[static_cast<int>(KernelKind::layer_norm)].calls, 0);
  reset_kernel_timing();
  EXPECT_EQ(kernel_timing()[static_cast<int>(KernelKind::matmul)].calls, 0);
}

TEST(LayerNorm, ForwardAndBackwardMatchNaive) {
  const int64_t rows = 5, C = 17;
  auto x = random_vector(rows * C, 1, 3.0f), gamma = random_vector(C, 2), beta = random_vector(C, 3);
  auto dy = random_vector(rows * C, 4);
  std::vector<float> y(rows * C), mean(rows), rstd(rows), dx(rows * C), dgamma(C, 0.5f), dbeta(C, -0.5f);
  layer_norm_forward(x.data(), gamma.data(), beta.data(), y.data(), mean.data(), rstd.data(), rows, C, 1e-5f);
  layer_norm_backward(dy.data(), x.data(), gamma.data(), mean.data(), rstd.data(), dx.data(), dgamma.data(),
                      dbeta.data(), rows, C);
  std::vector<double> ref_dgamma(C, 0.5), ref_dbeta(C, -0.5);
  for (int64_t r = 0; r < rows; ++r) {
    double mu = 0, var = 0;
    for (int64_t c = 0; c < C; ++c) mu += x[r * C + c];
    mu /= C;
    for (int64_t c = 0; c < C; ++c) var += (x[r * C + c] - mu) * (x[r * C + c] - mu);
    var /= C;
    const double rs = 1 / std::sqrt(var + 1e-5);
    std::vector<double> xhat(C), g(C);
    double sum_g = 0, sum_gx = 0;
    for (int64_t c = 0; c < C; ++c) {
      xhat[c] = (x[r * C + c] - mu) * rs;
      ASSERT_NEAR(y[r * C + c], xhat[c] * gamma[c] + beta[c], 1e-5);
      g[c] = dy[r * C + c] * gamma[c];
      sum_g += g[c];
      sum_gx += g[c] * xhat[c];
      ref_dgamma[c] += dy[r * C + c] * xhat[c];
      ref_dbeta[c] += dy[r * C + c];
    }
    // The textbook formula written out separately: dx = rstd/C · (C g - Σg - xhat Σ(g xhat)).
    for (int64_t c = 0; c < C; ++c) ASSERT_NEAR(dx[r * C + c], rs / C * (C * g[c] - sum_g - xhat[c] * sum_gx), 1e-4);
  }
  for (int64_t c = 0; c < C; ++c) {
    EXPECT_NEAR(dgamma[c], ref_dgamma[c], 1e-4);
    EXPECT_NEAR(dbeta[c], ref_dbeta[c], 1e-4);
  }
}

TEST(LayerNorm, Bf16OutputIsTheRoundingOfTheF32One) {
  const int64_t rows = 5, C = 37;
  auto x = random_vector(rows * C, 7, 3.0f), gamma = random_vector(C, 8), beta = random_vector(C, 9);
  std::vector<float> y(rows * C), y_fused(rows * C), mean(rows), rstd(rows), mean_fused(rows), rstd_fused(rows);
  std::vector<bf16> y_bf16(rows * C);
  layer_norm_forward(x.data(), gamma.data(), beta.data(), y.data(), mean.data(), rstd.data(), rows, C, 1e-5f);
  layer_norm_forward(x.data(), gamma.data(), beta.data(), y_fused.data(), mean_fused.data(), rstd_fused.data(), rows, C,
                     1e-5f, y_bf16.data());
  EXPECT_EQ(mean_fused, mean);
  EXPECT_EQ(rstd_fused, rstd);
  for (int64_t i = 0; i < rows * C; ++i) {
    ASSERT_EQ(y_fused[i], y[i]) << i;
    ASSERT_EQ(y_bf16[i].bits, to_bf16(y[i]).bits) << i;
  }
}

TEST(Softmax, MaskedForwardAndBackward) {
  const int64_t rows = 4, cols = 6;
  const float scale = 0.5f;
  auto s = random_vector(rows * cols, 1, 2.0f), dp = random_vector(rows * cols, 2);
  // Two rows share each mask row (rows_per_mask = 2).
  const std::vector<uint8_t> valid = {1, 1, 0, 1, 0, 1, 1, 1, 1, 1, 1, 0};
  std::vector<float> p(rows * cols), ds(rows * cols);
  softmax_forward(s.data(), p.data(), rows, cols, scale, valid.data(), 2);
  softmax_backward(dp.data(), p.data(), ds.data(), rows, cols, scale);
  for (int64_t r = 0; r < rows; ++r) {
    double z = 0;
    for (int64_t j = 0; j < cols; ++j)
      if (valid[(r / 2) * cols + j]) z += std::exp(scale * s[r * cols + j]);
    double dot = 0;
    for (int64_t j = 0; j < cols; ++j) {
      const double ref = valid[(r / 2) * cols + j] ? std::exp(scale * s[r * cols + j]) / z : 0.0;
      ASSERT_NEAR(p[r * cols + j], ref, 1e-6);
      dot += ref * dp[r * cols + j];
    }
    for (int64_t j = 0; j < cols; ++j) {
      const double ref_p = p[r * cols + j];
      ASSERT_NEAR(ds[r * cols + j], scale * ref_p * (dp[r * cols + j] - dot), 1e-5);
    }
  }
}

TEST(Softmax, Bf16GradientFromAnF32OneIsTheRoundingOfTheF32Kernels) {
  const int64_t rows = 6, cols = 37;  // not a multiple of the SIMD width
  const float scale = 0.7f;
  auto s = random_vector(rows * cols, 3, 3.0f), dp = random_vector(rows * cols, 4);
  std::vector<uint8_t> valid(2 * cols, 1);
  valid[5] = valid[cols + 36] = 0;
  std::vector<float> p(rows * cols), ds(rows * cols);
  std::vector<bf16> ds_bf16(rows * cols);
  softmax_forward(s.data(), p.data(), rows, cols, scale, valid.data(), 3);
  softmax_backward(dp.data(), p.data(), ds.data(), rows, cols, scale);
  softmax_backward_bf16(dp.data(), p.data(), ds_bf16.data(), rows, cols, scale);
  for (int64_t i = 0; i < rows * cols; ++i) ASSERT_EQ(ds_bf16[i].bits, to_bf16(ds[i]).bits) << i;
  EXPECT_EQ(to_float(ds_bf16[5]), 0.0f);  // a masked key: p = 0, so ds = 0
}

// Inference keeps the scores in bf16: their softmax in place must be the rounding of the f32
// softmax of the same (bf16-valued) scores, rows read whole before they are overwritten.
TEST(Softmax, InPlaceOnBf16ScoresIsTheRoundingOfTheF32Softmax) {
  const int64_t rows = 67, cols = 45;  // rows over both threads; cols not a multiple of the SIMD width
  const float scale = 0.6f;
  std::vector<uint8_t> valid(cols, 1);
  valid[0] = valid[44] = 0;
  for (const uint8_t* mask : {static_cast<const uint8_t*>(nullptr), static_cast<const uint8_t*>(valid.data())}) {
    std::vector<bf16> scores(rows * cols);
    std::vector<float> scores_f32(rows * cols), p(rows * cols);
    const auto s = random_vector(rows * cols, 8, 4.0f);
    for (int64_t i = 0; i < rows * cols; ++i) {
      scores[i] = to_bf16(s[i]);
      scores_f32[i] = to_float(scores[i]);
    }
    softmax_forward(scores_f32.data(), p.data(), rows, cols, scale, mask, rows);
    softmax_forward_bf16_in_place(scores.data(), rows, cols, scale, mask, rows);
    for (int64_t i = 0; i < rows * cols; ++i) ASSERT_EQ(scores[i].bits, to_bf16(p[i]).bits) << i;
    double row_sum = 0;
    for (int64_t j = 0; j < cols; ++j) row_sum += to_float(scores[j]);
    EXPECT_NEAR(row_sum, 1.0, 0.02);  // each probability rounded to 8 bits
    if (mask) {
      EXPECT_EQ(to_float(scores[(rows - 1) * cols + 44]), 0.0f);
    }
  }
}

// Training's bf16 path: bf16 scores in, P kept only as its rounding (over the scores, or as f32
// values for dropout), and a bf16 dP turned into the rounded d_scores in place from that bf16 P:
// the f32 kernels on the same values (P rounded, as the f32-operand path rounds it), rounded.
TEST(Softmax, TrainingFromBf16ScoresAndBf16GradientIsTheF32KernelsRounded) {
  const int64_t rows = 67, cols = 45;
  const float scale = 0.6f;
  std::vector<uint8_t> valid(cols, 1);
  valid[3] = 0;
  const auto s = random_vector(rows * cols, 9, 4.0f), g = random_vector(rows * cols, 10);
  std::vector<bf16> scores(rows * cols), dp(rows * cols);
  std::vector<float> scores_f32(rows * cols), dp_f32(rows * cols), p_f32(rows * cols), p_ref(rows * cols),
      ds(rows * cols);
  for (int64_t i = 0; i < rows * cols; ++i) {
    scores[i] = to_bf16(s[i]);
    scores_f32[i] = to_float(scores[i]);
    dp[i] = to_bf16(g[i]);
    dp_f32[i] = to_float(dp[i]);
  }
  softmax_forward(scores_f32.data(), p_ref.data(), rows, cols, scale, valid.data(), rows);
  std::vector<float> p_rounded(rows * cols);
  for (int64_t i = 0; i < rows * cols; ++i) p_rounded[i] = to_float(to_bf16(p_ref[i]));
  softmax_forward_bf16_scores(scores.data(), p_f32.data(), nullptr, rows, cols, scale, valid.data(), rows);
  softmax_forward_bf16_scores(scores.data(), nullptr, scores.data(), rows, cols, scale, valid.data(), rows);
  softmax_backward(dp_f32.data(), p_rounded.data(), ds.data(), rows, cols, scale);
  softmax_backward_bf16_gradient(dp.data(), scores.data(), dp.data(), rows, cols, scale);
  int64_t inexact = 0;  // P's rounding must differ from P somewhere, or the test shows nothing
  for (int64_t i = 0; i < rows * cols; ++i) {
    ASSERT_EQ(scores[i].bits, to_bf16(p_ref[i]).bits) << i;
    ASSERT_EQ(p_f32[i], p_rounded[i]) << i;
    ASSERT_EQ(dp[i].bits, to_bf16(ds[i]).bits) << i;
    inexact += p_rounded[i] != p_ref[i];
  }
  EXPECT_GT(inexact, rows * cols / 2);
  EXPECT_EQ(p_f32[3], 0.0f);  // a masked key
  EXPECT_EQ(to_float(dp[3]), 0.0f);
}

// The bf16 path's GELU backward: the f32 kernel's gradient rounded, its column sums those of
// add_column_sums over the f32 gradient, bit for bit.
TEST(Gelu, Bf16BackwardIsTheRoundedF32OneAndItsColumnSumsAreAddColumnSums) {
  const int64_t rows = 37, cols = 45;
  auto derivative = random_vector(rows * cols, 11, 2.0f);
  const auto dy = random_vector(rows * cols, 12);
  std::vector<float> y(rows * cols), dx(rows * cols), sums(cols, 0.25f), fused_sums(cols, 0.25f);
  std::vector<bf16> dx_bf16(rows * cols);
  gelu_forward_keeping_derivative(derivative.data(), y.data(), rows * cols);
  gelu_backward(dy.data(), derivative.data(), dx.data(), rows * cols);
  add_column_sums(dx.data(), rows, cols, cols, sums.data());
  gelu_backward_bf16_column_sums(dy.data(), derivative.data(), dx_bf16.data(), rows, cols, fused_sums.data());
  for (int64_t i = 0; i < rows * cols; ++i) ASSERT_EQ(dx_bf16[i].bits, to_bf16(dx[i]).bits) << i;
  for (int64_t c = 0; c < cols; ++c) ASSERT_EQ(fused_sums[c], sums[c]) << c;
  EXPECT_NE(sums[0], 0.25f);
}

// Training's GELU gives inference's output bit for bit (the f32 one, and its bf16 rounding), and
// leaves the derivative in place of its input.
TEST(Gelu, KeepingTheDerivativeGivesTheSameOutput) {
  const int64_t n = 1000;  // over both threads, not a multiple of the SIMD width
  const auto x = random_vector(n, 13, 4.0f);
  std::vector<float> y(n), y_kept(n), derivative = x, derivative_bf16 = x;
  std::vector<bf16> y_bf16(n), y_bf16_kept(n);
  gelu_forward(x.data(), y.data(), n);
  gelu_forward_bf16(x.data(), y_bf16.data(), n);
  gelu_forward_keeping_derivative(derivative.data(), y_kept.data(), n);
  gelu_forward_bf16_keeping_derivative(derivative_bf16.data(), y_bf16_kept.data(), n);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(y_kept[i], y[i]) << i;
    ASSERT_EQ(y_bf16_kept[i].bits, y_bf16[i].bits) << i;
    ASSERT_EQ(derivative_bf16[i], derivative[i]) << i;
    ASSERT_NE(derivative[i], x[i]) << i;
  }
}

TEST(Gelu, ForwardAndBackwardMatchTheErfForm) {
  const std::vector<float> x = {-4.0f, -1.5f, -0.3f, 0.0f, 0.2f, 1.0f, 3.5f};
  const auto n = static_cast<int64_t>(x.size());
  std::vector<float> y(x.size()), y_inference(x.size()), dx(x.size()), dy(x.size(), 1.0f), derivative = x;
  gelu_forward_keeping_derivative(derivative.data(), y.data(), n);
  gelu_forward(x.data(), y_inference.data(), n);
  gelu_backward(dy.data(), derivative.data(), dx.data(), n);
  for (size_t i = 0; i < x.size(); ++i) {
    const double xi = x[i];
    const double gelu = [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }(xi);
    EXPECT_NEAR(y[i], gelu, 1e-6);
    EXPECT_NEAR(y_inference[i], gelu, 1e-6);
    // Central difference in double of the same formula.
    const double h = 1e-5;
    const double fd = (0.5 * (xi + h) * (1 + std::erf((xi + h) / std::sqrt(2.0))) -
                       0.5 * (xi - h) * (1 + std::erf((xi - h) / std::sqrt(2.0)))) /
                      (2 * h);
    EXPECT_NEAR(dx[i], fd, 1e-5);
  }
}

// The bf16 path's fused cross-entropy: the loss of the f32 kernel, its gradient rounded, the
// logits left alone, and the gradient's column sums added as add_column_sums adds them.
TEST(CrossEntropy, Bf16GradientIsTheRoundedF32OneAndItsColumnSumsAreAddColumnSums) {
  const int64_t rows = 13, V = 333;  // rows over both threads; V not a multiple of the SIMD width
  const auto logits = random_vector(rows * V, 5, 3.0f);
  std::vector<int32_t> targets(rows);
  for (int64_t r = 0; r < rows; ++r) targets[r] = static_cast<int32_t>((r * 37) % V);
  const float scale = 0.125f;
  std::vector<float> f32 = logits, sums(V, 0.5f), fused_sums(V, 0.5f), kept = logits;
  std::vector<bf16> grad(rows * V);
  const auto a = cross_entropy(f32.data(), targets.data(), rows, V, scale);
  add_column_sums(f32.data(), rows, V, V, sums.data());
  const auto b =
      cross_entropy_bf16_gradient(kept.data(), targets.data(), rows, V, scale, grad.data(), fused_sums.data());
  EXPECT_EQ(a.loss_sum, b.loss_sum);
  EXPECT_EQ(a.correct, b.correct);
  for (int64_t i = 0; i < rows * V; ++i) {
    ASSERT_EQ(grad[i].bits, to_bf16(f32[i]).bits) << i;
    ASSERT_EQ(kept[i], logits[i]) << i;
  }
  for (int64_t j = 0; j < V; ++j) ASSERT_EQ(fused_sums[j], sums[j]) << j;
  EXPECT_NE(sums[targets[0]], 0.5f);  // a target column's sum moved
}

TEST(CrossEntropy, LossAccuracyAndGradient) {
  const int64_t rows = 3, V = 7;
  auto logits = random_vector(rows * V, 1, 2.0f);
  const std::vector<int32_t> targets = {0, 6, 3};
  const std::vector<float> original = logits;
  const float scale = 0.25f;
  const auto result = cross_entropy(logits.data(), targets.data(), rows, V, scale);
  double ref = 0;
  int64_t correct = 0;
  for (int64_t r = 0; r < rows; ++r) {
    double z = 0;
    int64_t argmax = 0;
    for (int64_t j = 0; j < V; ++j) {
      z += std::exp(static_cast<double>(original[r * V + j]));
      if (original[r * V + j] > original[r * V + argmax]) argmax = j;
    }
    ref += std::log(z) - original[r * V + targets[r]];
    correct += argmax == targets[r];
    for (int64_t j = 0; j < V; ++j) {
      const double g = scale * (std::exp(static_cast<double>(original[r * V + j])) / z - (j == targets[r]));
      ASSERT_NEAR(logits[r * V + j], g, 1e-6);
    }
  }
  EXPECT_NEAR(result.loss_sum, ref, 1e-5);
  EXPECT_EQ(result.correct, correct);
  std::vector<int32_t> bad = {0, 7, 1};
  EXPECT_THROW(cross_entropy(logits.data(), bad.data(), rows, V, 0.0f), Error);
}

TEST(Dropout, RateScaleDeterminismAndStreams) {
  const int64_t n = 100001;
  std::vector<float> x(n, 1.0f), y(n), y2(n), z(n);
  const float p = 0.3f;
  dropout_apply(x.data(), y.data(), n, p, 42, 7);
  dropout_apply(x.data(), y2.data(), n, p, 42, 7);
  dropout_apply(x.data(), z.data(), n, p, 42, 8);
  int64_t kept = 0, same_as_other_stream = 0;
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_TRUE(y[i] == 0.0f || std::abs(y[i] - 1.0f / 0.7f) < 1e-6f);
    ASSERT_EQ(y[i], y2[i]);
    kept += y[i] != 0.0f;
    same_as_other_stream += (y[i] != 0.0f) == (z[i] != 0.0f);
  }
  // Binomial(n, 0.7): standard deviation ≈ 145; allow 5 sigma.
  EXPECT_NEAR(static_cast<double>(kept), 0.7 * n, 725);
  EXPECT_LT(same_as_other_stream, n - 1000);  // another stream is another mask
  dropout_apply(x.data(), y.data(), n, 0.0f, 42, 7);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(y[i], 1.0f);
}

TEST(Dropout, MaskIsTheScalarPhiloxOfTheElementIndex) {
  // Element i keeps its value iff half i % 2 of word (i % 8) / 2 of Philox block i / 8
  // (counter {i / 8, 0, stream, stream >> 32}, key = seed) is ≥ p·2^16.
  const int64_t n = 3001;  // not a multiple of a batch
  const float p = 0.25f;
  const uint64_t seed = 0x1234567890abcdefull, stream = 0xfeedull << 32 | 99;
  std::vector<float> x = random_vector(n, 11), y(n);
  dropout_apply(x.data(), y.data(), n, p, seed, stream);
  for (int64_t i = 0; i < n; ++i) {
    const PhiloxCounter w = philox4x32_10(
        {static_cast<uint32_t>(i / 8), 0, static_cast<uint32_t>(stream), static_cast<uint32_t>(stream >> 32)},
        {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
    const uint32_t u = (w[(i % 8) / 2] >> (16 * (i % 2))) & 0xFFFFu;
    ASSERT_FLOAT_EQ(y[i], u >= static_cast<uint32_t>(0.25 * 65536) ? x[i] / 0.75f : 0.0f) << i;
    ASSERT_EQ(y[i] == 0.0f, u < static_cast<uint32_t>(0.25 * 65536)) << i;
  }
}

TEST(Dropout, AddIsTheResidualOfTheSameMaskInOnePass) {
  const int64_t n = 5000;
  const std::vector<float> x = random_vector(n, 12), branch = random_vector(n, 13);
  std::vector<float> dropped(n), y(n);
  dropout_apply(branch.data(), dropped.data(), n, 0.1f, 5, 6);
  dropout_add(x.data(), branch.data(), y.data(), n, 0.1f, 5, 6);
  for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(y[i], x[i] + dropped[i], 1e-6f) << i;  // (may be one fused multiply-add)
  std::vector<float> in_place = branch;                                              // y aliasing branch
  dropout_add(x.data(), in_place.data(), in_place.data(), n, 0.1f, 5, 6);
  EXPECT_EQ(in_place, y);
  in_place = x;  // y aliasing x
  dropout_add(in_place.data(), branch.data(), in_place.data(), n, 0.1f, 5, 6);
  EXPECT_EQ(in_place, y);
  dropout_add(x.data(), branch.data(), y.data(), n, 0.0f, 5, 6);  // p = 0: a plain sum
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(y[i], x[i] + branch[i]);
}

// Rows of a site computed alone (a layer's query rows) take the masks of those rows in the whole
// site: row r of dropout_*_rows is row index[r] of dropout_* over every row. A width that is not a
// multiple of a Philox batch (128 elements) makes rows start inside one.
TEST(Dropout, RowsTakeTheMasksOfTheirRowsInTheWholeSite) {
  const int64_t all_rows = 40, width = 75;
  const std::vector<float> x = random_vector(all_rows * width, 14), branch = random_vector(all_rows * width, 15);
  std::vector<float> dropped(all_rows * width), summed(all_rows * width);
  dropout_apply(branch.data(), dropped.data(), all_rows * width, 0.3f, 5, 6);
  dropout_add(x.data(), branch.data(), summed.data(), all_rows * width, 0.3f, 5, 6);
  const std::vector<int32_t> index = {39, 3, 3, 0, 17, 22, 1};  // any order, repeats
  const int64_t rows = static_cast<int64_t>(index.size());
  std::vector<float> x_rows(rows * width), branch_rows(rows * width), y(rows * width), z(rows * width);
  gather_rows(x.data(), index.data(), x_rows.data(), rows, width);
  gather_rows(branch.data(), index.data(), branch_rows.data(), rows, width);
  dropout_apply_rows(branch_rows.data(), y.data(), rows, width, index.data(), 0.3f, 5, 6);
  dropout_add_rows(x_rows.data(), branch_rows.data(), z.data(), rows, width, index.data(), 0.3f, 5, 6);
  int64_t dropped_count = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < width; ++c) {
      const int64_t i = r * width + c, whole = static_cast<int64_t>(index[r]) * width + c;
      ASSERT_EQ(y[i], dropped[whole]) << "row " << r << " column " << c;
      ASSERT_EQ(z[i], summed[whole]) << "row " << r << " column " << c;
      dropped_count += y[i] == 0.0f;
    }
  EXPECT_GT(dropped_count, rows * width / 5);  // p = 0.3 really dropped
  // Without an index, the rows in order: dropout_apply itself.
  dropout_apply_rows(branch.data(), y.data(), 2, width, nullptr, 0.3f, 5, 6);
  EXPECT_TRUE(std::equal(y.begin(), y.begin() + 2 * width, dropped.begin()));
}

TEST(Reduce, ColumnSumsGatherScatter) {
  const std::vector<float> x = {1, 2, 3, 9, 4, 5, 6, 9};  // 2 rows of 3 with a row stride of 4
  std::vector<float> sums = {10, 20, 30};
  add_column_sums(x.data(), 2, 3, 4, sums.data());
  EXPECT_EQ(sums, (std::vector<float>{15, 27, 39}));
  const std::vector<float> table = {0, 0, 1, 1, 2, 2};  // 3 rows of 2
  const std::vector<int32_t> index = {2, 0, 2};
  std::vector<float> gathered(6);
  gather_rows(table.data(), index.data(), gathered.data(), 3, 2);
  EXPECT_EQ(gathered, (std::vector<float>{2, 2, 0, 0, 2, 2}));
  std::vector<float> acc(6, 0.0f);
  scatter_add_rows(gathered.data(), index.data(), acc.data(), 3, 2);
  EXPECT_EQ(acc, (std::vector<float>{0, 0, 0, 0, 4, 4}));
}

// A sum over threads is each thread's static share summed on its own, then the shares' sums in
// thread order: the same bits every time, whichever thread finishes first (an OpenMP
// reduction(+) adds them as they finish, and over terms of mixed sign and size the order shows).
TEST(Reduce, SumInThreadOrderAddsTheThreadsSharesInThreadOrderEveryTime) {
  Rng rng(11);
  std::vector<double> terms(4099);  // not a multiple of any team size below
  for (double& t : terms) t = (rng.uniform() - 0.5) * std::pow(10.0, 16.0 * rng.uniform() - 8.0);
  const int saved = omp_get_max_threads();
  for (const int threads : {1, 2, 3, 4}) {
    const int64_t n = static_cast<int64_t>(terms.size());
    omp_set_num_threads(1);
    double expected = 0;
    for (int64_t t = 0; t < threads; ++t) {  // thread t's share, summed alone, as that thread sums it
      const int64_t begin = n * t / threads, end = n * (t + 1) / threads;
      expected += sum_in_thread_order(end - begin, [&](int64_t i) { return terms[static_cast<size_t>(begin + i)]; });
    }
    omp_set_num_threads(threads);
    for (int repeat = 0; repeat < 50; ++repeat)
      ASSERT_EQ(sum_in_thread_order(n, [&](int64_t i) { return terms[static_cast<size_t>(i)]; }), expected)
          << threads << " threads, repeat " << repeat;
  }
  omp_set_num_threads(saved);
}

}  // namespace
}  // namespace linformer

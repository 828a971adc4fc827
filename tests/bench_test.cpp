// The bench commands run and their FLOP count is the one documented.

#include "linformer/bench/train_bench.h"
#include "model_test_util.h"
#include "linformer/core/fs.h"
#include "test_util.h"

#include <gtest/gtest.h>

namespace linformer {
namespace {

using ::testing::HasSubstr;

TEST(BenchTrain, FlopCountByHand) {
  // 1 layer, C = 4, F = 8, V = 10, B = 2, T = 6, M = 3, full attention:
  //   in_proj 2·12·4·12 = 1152, out_proj 2·12·4·4 = 384, FFN 2·2·12·4·8 = 1536,
  //   QKᵀ and PV 2·(2·12·6·4) = 1152, head 2·3·4·4 + 2·3·4·10 = 336.
  ModelSpec full = testing::tiny_spec({{"layers", 1}, {"d_model", 4}, {"heads", 2}, {"ffn_dim", 8}, {"vocab_size", 10},
                                       {"attention", "full"}, {"k_per_layer", nlohmann::json::array()}});
  EXPECT_DOUBLE_EQ(forward_matmul_flops(full, 2, 6, 3), 1152 + 384 + 1536 + 1152 + 336);
  // Linformer with K = 2: compression 2·(2·2·2·6·4) = 384, QK̃ᵀ and PṼ 2·(2·12·2·4) = 384.
  ModelSpec lin = testing::tiny_spec({{"layers", 1}, {"d_model", 4}, {"heads", 2}, {"ffn_dim", 8}, {"vocab_size", 10},
                                      {"k_per_layer", {2}}});
  EXPECT_DOUBLE_EQ(forward_matmul_flops(lin, 2, 6, 3), 1152 + 384 + 1536 + 384 + 384 + 336);
}

TEST(BenchTrain, CommandReportsThroughputAndWritesJson) {
  testing::TempDir dir;
  const std::string json = (dir.path() / "bench.json").string();
  const auto r = testing::run_linformer("bench train --recipe recipes/ci/tiny.toml --warmup 1 --steps 2 --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("tokens/s"));
  EXPECT_THAT(r.output, HasSubstr("GFLOP/s"));
  EXPECT_THAT(r.output, HasSubstr("of the measured fp32 matmul peak"));
  for (const char* stage : {"embedding", "block 0", "block 1", "mlm head + loss", "optimizer (AdamW)"})
    EXPECT_THAT(r.output, HasSubstr(stage));
  const auto j = nlohmann::json::parse(read_file(json));
  EXPECT_GT(j.at("tokens_per_second").get<double>(), 0);
  EXPECT_EQ(j.at("timed_steps").get<int>(), 2);
  EXPECT_GT(j.at("measured_fp32_matmul_peak_gflops").get<double>(), 0);
  ASSERT_EQ(j.at("stages").size(), 4u);  // embedding, 2 blocks, head
  EXPECT_GT(j.at("stages")[1].at("backward_ms").get<double>(), 0);
}

}  // namespace
}  // namespace linformer

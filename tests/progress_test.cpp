// Progress: amounts formatted for people; bars and heartbeats start and stop cleanly.

#include "linformer/core/progress.h"

#include <gtest/gtest.h>

#include <chrono>

namespace linformer {
namespace {

TEST(Progress, FormatsAmounts) {
  EXPECT_EQ(Progress::format_amount(512, Progress::Unit::bytes), "512 B");
  EXPECT_EQ(Progress::format_amount(1500, Progress::Unit::bytes), "1.5 kB");
  EXPECT_EQ(Progress::format_amount(6.04e6, Progress::Unit::bytes), "6.0 MB");
  EXPECT_EQ(Progress::format_amount(2.5e9, Progress::Unit::bytes), "2.50 GB");
  EXPECT_EQ(Progress::format_amount(999, Progress::Unit::items), "999");
  EXPECT_EQ(Progress::format_amount(1.25e6, Progress::Unit::items), "1.25M");
}

TEST(Progress, UpdatesAreCheapAndHeartbeatsStopPromptly) {
  const auto start = std::chrono::steady_clock::now();
  {
    Progress p("test", 1000000, Progress::Unit::items);
    for (uint64_t i = 0; i <= 1000000; ++i) p.update(i);
    p.finish();
    Heartbeat h("waiting");
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0);
}

}  // namespace
}  // namespace linformer

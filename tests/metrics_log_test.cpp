#include "linformer/train/metrics_log.h"
#include "linformer/core/check.h"
#include "linformer/core/fs.h"
#include "test_util.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <sstream>

namespace linformer {
namespace {

std::vector<std::string> lines(const std::string& path) {
  std::istringstream in(read_file(path));
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

MetricsRow row(const char* kind, int64_t update) {
  MetricsRow r;
  r.kind = kind;
  r.update = update;
  r.loss = 2.0;
  r.perplexity = 7.389056;
  return r;
}

TEST(MetricsLog, ResumeDropsRowsAfterTheCheckpointAndAppends) {
  testing::TempDir dir;
  {
    MetricsLog log(dir.path().string(), 0);
    for (int64_t u : {10, 20, 30}) log.append(row("train", u));
    log.append(row("valid", 20));
    log.append(row("valid", 30));
  }
  {
    // The run resumes from the checkpoint of update 20: rows of 30 are about to come again.
    MetricsLog log(dir.path().string(), 20);
    log.append(row("train", 30));
    log.append(row("valid", 30));
  }
  const auto csv = lines(dir.path().string() + "/metrics.csv");
  ASSERT_EQ(csv.size(), 6u);  // header + 10, 20, valid 20, 30, valid 30
  EXPECT_EQ(csv[0].rfind("kind,update,tokens", 0), 0u);
  EXPECT_EQ(csv[1].rfind("train,10,", 0), 0u);
  EXPECT_EQ(csv[3].rfind("valid,20,", 0), 0u);
  EXPECT_EQ(csv[4].rfind("train,30,", 0), 0u);
  EXPECT_EQ(csv[5].rfind("valid,30,", 0), 0u);
  const auto jsonl = lines(dir.path().string() + "/metrics.jsonl");
  ASSERT_EQ(jsonl.size(), 5u);
  EXPECT_EQ(nlohmann::json::parse(jsonl[4]).at("kind"), "valid");
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(jsonl[0]).at("perplexity").get<double>(), 7.389056);
}

TEST(MetricsLog, OlderCsvGetsTodaysColumnsByName) {
  testing::TempDir dir;
  // A metrics.csv from before the unigram and macro F1 columns existed, resumed from update 10.
  dir.write("metrics.csv",
            "kind,update,tokens,epoch,lr,loss,perplexity,accuracy,grad_norm,tokens_per_second,elapsed_seconds\n"
            "train,10,4096,0,0.001,6.5,665.14,0.1,1.2,9000.0,4.50\n"
            "train,20,8192,0,0.001,6.4,601.85,0.1,1.1,9100.0,9.00\n");
  {
    MetricsLog log(dir.path().string(), 10);
    MetricsRow valid = row("valid", 20);
    valid.unigram_perplexity = 940.5;
    log.append(valid);
  }
  const auto csv = lines(dir.path().string() + "/metrics.csv");
  ASSERT_EQ(csv.size(), 3u);
  EXPECT_EQ(csv[0],
            "kind,update,tokens,epoch,lr,loss,perplexity,accuracy,grad_norm,unigram_perplexity,macro_f1,"
            "shuffled_perplexity,tokens_per_second,elapsed_seconds");
  EXPECT_EQ(csv[1], "train,10,4096,0,0.001,6.5,665.14,0.1,1.2,,,,9000.0,4.50");
  EXPECT_EQ(csv[2].rfind("valid,20,", 0), 0u);
  EXPECT_NE(csv[2].find(",940.5000,"), std::string::npos) << csv[2];
}

// A run directory whose metrics.csv is a directory escaped as "[critical] unexpected error"
// (issue 48, item 13): the error names the path and what it is.
TEST(MetricsLog, AMetricsPathThatIsADirectoryIsRefusedNamingIt) {
  for (const char* name : {"metrics.csv", "metrics.jsonl"}) {
    testing::TempDir dir;
    std::filesystem::create_directories(dir.path() / name / "inside");
    try {
      MetricsLog log(dir.path().string(), 0);
      ADD_FAILURE() << "accepted a directory as " << name;
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr((dir.path() / name).string() + " is a directory, not a file"));
    }
  }
}

TEST(MetricsLog, RefusesAForeignCsv) {
  testing::TempDir dir;
  dir.write("metrics.csv", "a,b,c\n1,2,3\n");
  try {
    MetricsLog log(dir.path().string(), 0);
    FAIL() << "accepted a foreign metrics.csv";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a metrics file"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace linformer

// linformer train end to end on a small made-up corpus: exact resume, SIGTERM, gradient
// accumulation, refused resumes, metrics.

#include "data_test_corpus.h"
#include "linformer/config/recipe_loader.h"
#include "linformer/core/checksum.h"
#include "linformer/core/fs.h"
#include "linformer/data/prepared.h"
#include "linformer/data/special_tokens.h"
#include "linformer/infer/inference.h"
#include "linformer/kernels/context.h"
#include "linformer/nn/safetensors.h"
#include "linformer/train/checkpoint.h"
#include "linformer/train/trainer.h"
#include "test_util.h"
#include "train_fixture.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <sstream>

namespace linformer {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::TempDir;
namespace fs = std::filesystem;

using TrainTest = testing::TrainFixture;

TEST_F(TrainTest, ResumedRunIsBitIdenticalToAStraightRun) {
  TempDir runs;
  const std::string straight = (runs.path() / "straight").string(), resumed = (runs.path() / "resumed").string();
  const std::vector<std::string> dropout = {"model.dropout=0.1", "model.attention_dropout=0.1"};
  auto with = [&](std::vector<std::string> v, const std::string& extra) {
    v.push_back(extra);
    return v;
  };
  const auto a = train(straight, with(dropout, "train.max_updates=16"));
  train(resumed, with(dropout, "train.max_updates=8"));
  // The interrupted run wrote rows past its last checkpoint: simulate that by resuming from update 4.
  fs::remove_all(resumed + "/checkpoints/checkpoint_00000008");
  const auto b = train(resumed, with(dropout, "train.max_updates=16"), "auto");
  EXPECT_EQ(a.updates, 16);
  EXPECT_EQ(b.updates, 16);
  EXPECT_EQ(metric_rows(straight), metric_rows(resumed));
  EXPECT_EQ(metric_rows(straight).size(), 1u + 8 + 4);  // header, train rows every 2, valid rows every 4
  EXPECT_TRUE(final_weights(straight) == final_weights(resumed)) << "final weights differ";
  EXPECT_EQ(a.valid_loss, b.valid_loss);
}

// The log's tokens (and its tokens/s) count the batches' real tokens, <s> included, not their
// padding: one epoch of one-sentence blocks at batch size 1 reads every block of the training
// split once, each row <s> + the block, padded to n; a sentence longer than n - 1 tokens (its
// </s> included) is cut into windows of n - 1, each a block of its own.
TEST_F(TrainTest, TokensCountTheBatchesRealTokensNotTheirPadding) {
  const int64_t n = 32;  // the fixture's data.seq_len
  const data::PreparedData prepared = data::open_prepared((dir_->path() / "prepared").string());
  const data::Shard& stream = prepared.train;
  int64_t blocks = 0, cut_sentences = 0, length = 0;
  for (uint64_t i = 0; i < stream.token_count(); ++i) {
    ++length;
    if (stream.token(i) != data::kEosId) continue;
    const int64_t windows = (length + n - 2) / (n - 1);
    blocks += windows;
    cut_sentences += windows > 1;
    length = 0;
  }
  ASSERT_EQ(length, 0) << "the training split ends inside a sentence";
  ASSERT_GT(cut_sentences, 0) << "the corpus no longer has sentences longer than n - 1: the cut goes untested";
  TempDir runs;
  const std::string run = (runs.path() / "run").string();
  const std::string updates = std::to_string(blocks);
  train(run, {"data.break_mode=\"eos\"", "train.batch_size=1", "train.max_updates=" + updates,
              "logging.every=" + updates, "validation.every=0", "checkpoint.every=0", "validation.max_batches=1"});
  const auto rows = metric_rows(run);
  ASSERT_EQ(rows.size(), 3u) << "header, one train row, the final validation";
  std::vector<std::string> cells;  // kind, update, tokens, …
  std::istringstream row(rows[1]);
  for (std::string cell; std::getline(row, cell, ',');) cells.push_back(cell);
  ASSERT_GE(cells.size(), 3u) << rows[1];
  ASSERT_EQ(cells[0] + "," + cells[1], "train," + updates) << rows[1];
  const int64_t tokens = std::stoll(cells[2]);
  EXPECT_EQ(tokens, static_cast<int64_t>(stream.token_count()) + blocks);  // each block's tokens and its <s>
  EXPECT_LT(tokens, blocks * n);                                           // what counting the padded rows would give
}

TEST_F(TrainTest, Bf16WithoutHardwareWarnsAndTrainsExactlyAsFp32) {
  if (cpu_has_bf16()) GTEST_SKIP() << "this CPU has avx512_bf16: bf16 is really used here";
  TempDir runs;
  const std::string fp32 = (runs.path() / "fp32").string(), bf16 = (runs.path() / "bf16").string();
  const std::vector<std::string> common = {"train.max_updates=4", "validation.every=0", "checkpoint.every=0"};
  train(fp32, common);
  auto with_bf16 = common;
  with_bf16.push_back("train.precision=\"bf16\"");
  train(bf16, with_bf16);
  EXPECT_THAT(read_file(bf16 + "/train.log"), HasSubstr("needs a CPU with avx512_bf16"));
  EXPECT_EQ(metric_rows(fp32), metric_rows(bf16));
}

// The last logged training loss of a run (metrics.jsonl).
double last_train_loss(const std::string& run) {
  std::istringstream jsonl(read_file(run + "/metrics.jsonl"));
  double loss = 0;
  for (std::string line; std::getline(jsonl, line);)
    if (nlohmann::json row = nlohmann::json::parse(line); row["kind"] == "train") loss = row["loss"].get<double>();
  return loss;
}

TEST_F(TrainTest, Bf16TrainsCloseToFp32AndEvaluatesInEitherPrecision) {
  if (!cpu_has_bf16()) GTEST_SKIP() << "no avx512_bf16 on this CPU (" << dnnl_cpu_isa_name() << ")";
  TempDir runs;
  const std::string fp32 = (runs.path() / "fp32").string(), bf16 = (runs.path() / "bf16").string();
  const std::vector<std::string> common = {"train.max_updates=20", "model.dropout=0", "model.attention_dropout=0",
                                           "validation.every=0", "checkpoint.every=0"};
  const auto a = train(fp32, common);
  auto with_bf16 = common;
  with_bf16.push_back("train.precision=\"bf16\"");
  const auto b = train(bf16, with_bf16);
  select_matmul_precision(false);  // the run left bf16 on for this process
  EXPECT_THAT(read_file(bf16 + "/train.log"), HasSubstr("precision: bf16 matmuls"));
  // bf16 operands change every product a little, so the runs differ, but not by much after 20
  // updates (bf16 keeps 8 bits of mantissa: relative errors of about 0.4% per operand).
  EXPECT_NE(metric_rows(fp32), metric_rows(bf16)) << "the bf16 run is bit-identical to fp32: bf16 was not used";
  EXPECT_NEAR(b.valid_loss / a.valid_loss, 1.0, 0.01);
  EXPECT_NEAR(last_train_loss(bf16) / last_train_loss(fp32), 1.0, 0.01);

  // eval of one checkpoint in both precisions, through the command line.
  const std::string checkpoint = list_checkpoints(bf16 + "/checkpoints").back().path;
  auto perplexity = [&](const std::string& precision) {
    const std::string json = (runs.path() / ("eval_" + precision + ".json")).string();
    const auto r =
        testing::run_linformer("eval --checkpoint " + checkpoint + " --precision " + precision + " --json " + json);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    const auto j = nlohmann::json::parse(read_file(json));
    EXPECT_EQ(j["precision"], precision);
    return j["perplexity"].get<double>();
  };
  const double eval_fp32 = perplexity("fp32"), eval_bf16 = perplexity("bf16");
  EXPECT_NE(eval_fp32, eval_bf16);
  EXPECT_NEAR(eval_bf16 / eval_fp32, 1.0, 0.01);
  const auto fill =
      testing::run_linformer("fill-mask --precision bf16 --checkpoint " + checkpoint + " \"kalo <mask> mine.\"");
  EXPECT_EQ(fill.exit_code, 0) << fill.output;
}

TEST_F(TrainTest, AccumulationEqualsOneBigBatch) {
  // 4 micro-batches of 2 rows are the same blocks and masks as batches of 8 (dropout off).
  TempDir runs;
  const std::vector<std::string> common = {"model.dropout=0",    "model.attention_dropout=0", "train.max_updates=6",
                                           "validation.every=0", "validation.max_batches=0",  "checkpoint.every=0"};
  auto with = [&](std::vector<std::string> extra) {
    auto v = common;
    v.insert(v.end(), extra.begin(), extra.end());
    return v;
  };
  const auto big = train((runs.path() / "big").string(), with({"train.batch_size=8", "train.accumulation=1"}));
  const auto acc = train((runs.path() / "acc").string(), with({"train.batch_size=2", "train.accumulation=4"}));
  EXPECT_NEAR(big.valid_loss, acc.valid_loss, 1e-5 * big.valid_loss);
  const auto rows_big = metric_rows((runs.path() / "big").string()),
             rows_acc = metric_rows((runs.path() / "acc").string());
  ASSERT_EQ(rows_big.size(), rows_acc.size());
  const auto wa = safetensors::File::read(list_checkpoints((runs.path() / "big/checkpoints").string()).back().path +
                                          "/model.safetensors");
  const auto wb = safetensors::File::read(list_checkpoints((runs.path() / "acc/checkpoints").string()).back().path +
                                          "/model.safetensors");
  double max_diff = 0;
  for (const auto& name : wa.names()) {
    const auto x = wa.as_doubles(name), y = wb.as_doubles(name);
    for (size_t i = 0; i < x.size(); ++i) max_diff = std::max(max_diff, std::abs(x[i] - y[i]));
  }
  EXPECT_LT(max_diff, 1e-5) << "weights after 6 updates";
}

// Sequence-length warm-up (train.short_seq_len): full attention with fixed positions, so a model
// of n = 32 and one of n = 16 start from the same weights and the phases can be compared with
// plain runs.
const std::vector<std::string> kWarmUpModel = {"model.attention=full", "model.positions=sinusoidal",
                                               "train.max_updates=8", "checkpoint.every=2"};
const std::vector<std::string> kWarmUp = {"train.short_seq_len=16", "train.short_seq_updates=4"};

std::vector<std::string> joined(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The metrics rows of `kind` ("train", "valid") whose update is in [first, last].
std::vector<std::string> rows_between(const std::vector<std::string>& rows, const std::string& kind, int first,
                                      int last) {
  std::vector<std::string> out;
  for (const auto& row : rows) {
    if (row.rfind(kind + ",", 0) != 0) continue;
    const int update = std::stoi(row.substr(kind.size() + 1));
    if (update >= first && update <= last) out.push_back(row);
  }
  return out;
}

TEST_F(TrainTest, ShortSequenceWarmUpTrainsOnShortBlocksThenOnFullOnes) {
  TempDir runs;
  const std::string warm = (runs.path() / "warm").string(), short_run = (runs.path() / "short").string(),
                    full_run = (runs.path() / "full").string();
  train(warm, joined(kWarmUpModel, kWarmUp));
  const std::string log = read_file(warm + "/train.log");
  EXPECT_THAT(log, HasSubstr("sequence-length warm-up: updates 1 to 4 on blocks of 16 tokens"));
  EXPECT_THAT(log, HasSubstr("sequence-length warm-up done at update 4: blocks of 32 tokens from here"));
  // Updates 1-4: the updates of a run on blocks of 16 with twice the micro-batches, row for row.
  train(short_run, joined(kWarmUpModel, {"data.seq_len=16", "train.accumulation=2"}));
  const auto warm_rows = metric_rows(warm);
  const auto short_first = rows_between(metric_rows(short_run), "train", 1, 4);
  ASSERT_EQ(short_first.size(), 2u);
  EXPECT_EQ(rows_between(warm_rows, "train", 1, 4), short_first);
  // Updates 5-8: those of a run on blocks of 32 continued from the warm-up's update 4 with its data
  // position reset (the n-token blocks from the start of their order).
  TrainOptions o;
  o.recipe_path = recipe_;
  o.overrides = kWarmUpModel;
  o.run_dir = full_run;
  o.resume = warm + "/checkpoints/checkpoint_00000004";
  o.reset_data = true;
  run_training(o);
  const auto full_rows = metric_rows(full_run);
  ASSERT_EQ(rows_between(full_rows, "train", 5, 8).size(), 2u);
  EXPECT_EQ(rows_between(warm_rows, "train", 5, 8), rows_between(full_rows, "train", 5, 8));
  EXPECT_EQ(rows_between(warm_rows, "valid", 5, 8), rows_between(full_rows, "valid", 5, 8));
  EXPECT_TRUE(final_weights(warm) == final_weights(full_run)) << "final weights differ";
}

TEST_F(TrainTest, ShortSequenceWarmUpResumesExactlyOnEitherSideOfTheSwitch) {
  TempDir runs;
  const std::string straight = (runs.path() / "straight").string();
  const auto recipe = joined(kWarmUpModel, kWarmUp);
  train(straight, recipe);
  // Resumed from update 2 (warm-up), 4 (the switch: the next update is the first on 32 tokens), 6.
  for (int from : {2, 4, 6}) {
    SCOPED_TRACE("resumed from update " + std::to_string(from));
    const std::string resumed = (runs.path() / ("from" + std::to_string(from))).string();
    fs::copy(straight, resumed, fs::copy_options::recursive);
    for (const auto& c : list_checkpoints(resumed + "/checkpoints"))
      if (c.update > from) fs::remove_all(c.path);
    train(resumed, recipe, "auto");
    EXPECT_EQ(metric_rows(straight), metric_rows(resumed));
    EXPECT_TRUE(final_weights(straight) == final_weights(resumed)) << "final weights differ";
  }
  // Switching the warm-up off (or changing it) moves the data position: refused, naming the key.
  const std::string changed = (runs.path() / "changed").string();
  fs::copy(straight, changed, fs::copy_options::recursive);
  fs::remove_all(changed + "/checkpoints/checkpoint_00000008");
  try {
    train(changed, kWarmUpModel, "auto");
    FAIL() << "resumed a warm-up run without its warm-up";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("train.short_seq_len (16 in the checkpoint, 0 now)"));
  }
}

// Checkpoints written before the warm-up existed do not record its keys: they read as "off",
// so such a run resumes exactly without a warm-up and is refused with one.
TEST_F(TrainTest, ACheckpointFromBeforeTheWarmUpResumesAsWarmUpOff) {
  TempDir runs;
  const std::string straight = (runs.path() / "straight").string(), old = (runs.path() / "old").string();
  train(straight, kWarmUpModel);
  fs::copy(straight, old, fs::copy_options::recursive);
  for (const auto& c : list_checkpoints(old + "/checkpoints")) {
    if (c.update > 4) {
      fs::remove_all(c.path);
      continue;
    }
    const std::string state_path = c.path + "/state.json";
    nlohmann::json meta = nlohmann::json::parse(read_file(state_path));
    auto& order = meta.at("state").at("data").at("order");
    ASSERT_EQ(order.erase("train.short_seq_len") + order.erase("train.short_seq_updates"), 2u) << state_path;
    write_file_atomic(state_path, meta.dump(2));
    write_file_atomic(c.path + "/DONE", "complete\n");  // such checkpoints' marker had no state.json crc32
  }
  try {
    train(old, joined(kWarmUpModel, kWarmUp), "auto");
    FAIL() << "resumed a checkpoint without a warm-up into a warm-up";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("train.short_seq_len (0 in the checkpoint, 16 now)"));
    EXPECT_THAT(e.what(), HasSubstr("train.short_seq_updates (0 in the checkpoint, 4 now)"));
  }
  train(old, kWarmUpModel, "auto");
  EXPECT_EQ(metric_rows(straight), metric_rows(old));
  EXPECT_TRUE(final_weights(straight) == final_weights(old)) << "final weights differ";
}

// Signals the run once it has logged its second update (whatever the machine's load): it stops
// with one checkpoint and the hint. Returns the checkpoint's update.
int64_t stop_with_signal(const std::string& recipe, const std::string& run, const std::string& signal) {
  const auto r = testing::run_command(
      "'" LINFORMER_BINARY "' train --recipe " + recipe + " --run-dir " + run +
      " --set train.max_updates=100000000 --set validation.every=0 --set checkpoint.every=0 2>&1 & pid=$!; "
      "for i in $(seq 1200); do grep -q 'update 4/' " +
      run +
      "/train.log 2>/dev/null && break; sleep 0.05; done; "
      "kill -" +
      signal + " $pid; wait $pid");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("interrupted by SIG" + signal));
  EXPECT_THAT(r.output, HasSubstr("--resume auto"));
  const auto all = list_checkpoints(run + "/checkpoints");
  EXPECT_EQ(all.size(), 1u);
  return all.empty() ? 0 : all[0].update;
}

// SIGUSR1 too: what mpirun passes on at once without ending the job (docs/mpi.md).
TEST_F(TrainTest, SigtermOrSigusr1WritesACheckpointAndTheRunResumes) {
  for (const std::string signal : {"TERM", "USR1"}) {
    SCOPED_TRACE("SIG" + signal);
    TempDir runs;
    const std::string run = (runs.path() / "run").string();
    const int64_t stopped_at = stop_with_signal(recipe_, run, signal);
    ASSERT_GT(stopped_at, 0);
    EXPECT_EQ(train(run, {"train.max_updates=" + std::to_string(stopped_at + 4)}, "auto").updates, stopped_at + 4);
  }
}

TEST_F(TrainTest, RefusesAnIncompatibleResumeAndAnAccidentalRestart) {
  TempDir runs;
  const std::string run = (runs.path() / "run").string();
  train(run, {"train.max_updates=4"});
  try {
    train(run, {"train.max_updates=8", "model.d_model=64", "model.heads=4"}, "auto");
    FAIL() << "resumed with another model shape";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("model.d_model (32 in the checkpoint, 64 now)"));
    EXPECT_THAT(e.what(), HasSubstr("model.heads"));
  }
  try {
    train(run, {"train.max_updates=8"});  // no --resume: would silently start over
    FAIL() << "started over a run that has checkpoints";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("--resume auto"));
  }
  // Fine-tuning style: fresh optimizer, schedule and data position, into a new run directory.
  TrainOptions o;
  o.recipe_path = recipe_;
  o.overrides = {"train.max_updates=3"};
  o.run_dir = run;
  o.resume = "auto";
  o.reset_optimizer = o.reset_schedule = o.reset_data = true;
  try {
    run_training(o);  // the same directory: its update numbers would collide with the old ones
    FAIL() << "a schedule reset wrote into a run directory with checkpoints";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("write into a new --run-dir"));
  }
  o.resume = list_checkpoints(run + "/checkpoints").back().path;
  o.run_dir = (runs.path() / "finetune").string();
  EXPECT_EQ(run_training(o).updates, 3);
  EXPECT_EQ(list_checkpoints(o.run_dir + "/checkpoints").back().update, 3);
}

TEST_F(TrainTest, MissingPreparedDataSaysWhatToRun) {
  TempDir runs;
  const auto r = testing::run_linformer("train --recipe " + recipe_ + " --run-dir " + (runs.path() / "x").string() +
                                        " --set data.prepared_dir=" + (runs.path() / "nothing").string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("run `linformer prepare --recipe"));
}

TEST_F(TrainTest, ResumingAFinishedRunChangesNothing) {
  TempDir runs;
  const std::string run = (runs.path() / "run").string();
  const auto first = train(run, {"train.max_updates=4"});
  const std::string metrics = read_file(run + "/metrics.csv");
  const auto checkpoints = list_checkpoints(run + "/checkpoints");
  const auto again = train(run, {"train.max_updates=4"}, "auto");
  EXPECT_EQ(again.updates, 4);
  EXPECT_EQ(again.valid_loss, first.valid_loss);
  EXPECT_EQ(read_file(run + "/metrics.csv"), metrics) << "a finished run's metrics changed when it was resumed";
  ASSERT_EQ(list_checkpoints(run + "/checkpoints").size(), checkpoints.size());
  EXPECT_EQ(list_checkpoints(run + "/checkpoints").back().path, checkpoints.back().path);
  // With a larger budget the same run continues.
  EXPECT_EQ(train(run, {"train.max_updates=6"}, "auto").updates, 6);
}

// Pretraining counted in epochs: train.max_epochs stops the run after whole passes over the
// training split, validation.every_epochs and checkpoint.every_epochs act at each pass's end, and
// the learning-rate schedule's length is the epochs' updates.
TEST_F(TrainTest, EpochKeysStopValidateAndCheckpointAtEpochEnds) {
  TempDir runs;
  const std::vector<std::string> by_epoch = {"train.max_updates=0",       "validation.every=0",
                                             "validation.every_epochs=1", "checkpoint.every=0",
                                             "checkpoint.every_epochs=1", "logging.every=1000"};
  auto with = [&](const std::vector<std::string>& more) {  // more last: it overrides
    std::vector<std::string> all = by_epoch;
    all.insert(all.end(), more.begin(), more.end());
    return all;
  };
  const std::string one = (runs.path() / "one").string();
  const int64_t epoch = train(one, with({"train.max_epochs=1"})).updates;
  ASSERT_GT(epoch, 4) << "the fixture's epoch is too short to tell epochs from updates";
  const std::string three = (runs.path() / "three").string();
  EXPECT_EQ(train(three, with({"train.max_epochs=3"})).updates, 3 * epoch);
  EXPECT_EQ(updates_of(rows_of(metric_rows(three), "valid")), (std::vector<int64_t>{epoch, 2 * epoch, 3 * epoch}));
  std::vector<int64_t> saved;
  for (const auto& c : list_checkpoints(three + "/checkpoints")) saved.push_back(c.update);
  EXPECT_EQ(saved, (std::vector<int64_t>{epoch, 2 * epoch, 3 * epoch}));
  // Each epoch's end closes the logging interval; the rate decays over the three epochs (a
  // schedule without the epochs' length would hold it, or drop it to 0 after the warm-up).
  const auto train_rows = rows_of(metric_rows(three), "train");
  EXPECT_EQ(updates_of(train_rows), (std::vector<int64_t>{epoch, 2 * epoch, 3 * epoch}));
  std::vector<double> lr;  // the fifth column
  for (const auto& row : train_rows) {
    size_t at = 0;
    for (int i = 0; i < 4; ++i) at = row.find(',', at) + 1;
    lr.push_back(std::stod(row.substr(at)));
  }
  ASSERT_EQ(lr.size(), 3u);
  EXPECT_GT(lr[0], lr[1]);
  EXPECT_GT(lr[1], lr[2]);
  EXPECT_GT(lr[1], 0.0) << "the rate fell to 0 before the last epoch";
  // Every other epoch, counted on from a resume.
  const std::string every_two = (runs.path() / "every_two").string();
  train(every_two, with({"train.max_epochs=2", "validation.every_epochs=2"}));
  EXPECT_EQ(train(every_two, with({"train.max_epochs=4", "validation.every_epochs=2"}), "auto").updates, 4 * epoch);
  EXPECT_EQ(updates_of(rows_of(metric_rows(every_two), "valid")), (std::vector<int64_t>{2 * epoch, 4 * epoch}));
}

// validation.max_tokens is validation.max_batches counted in token positions (batches of 4 × 32
// here, so 200 positions are two batches); the default bound is above a small split's size
// (the fixture's recipe bounds max_batches: 0 lifts it).
TEST_F(TrainTest, ValidationMaxTokensBoundsTheValidationToTheSplitsFirstBatches) {
  TempDir runs;
  const auto valid_rows = [&](const std::string& name, std::vector<std::string> settings) {
    settings.push_back("train.max_updates=4");
    train((runs.path() / name).string(), settings);
    return rows_of(metric_rows((runs.path() / name).string()), "valid");
  };
  const auto by_tokens = valid_rows("tokens", {"validation.max_tokens=200", "validation.max_batches=0"});
  EXPECT_EQ(by_tokens, valid_rows("batches", {"validation.max_tokens=0", "validation.max_batches=2"}));
  const auto whole = valid_rows("whole", {"validation.max_tokens=0", "validation.max_batches=0"});
  EXPECT_NE(by_tokens, whole) << "the valid split is no longer than two batches: the test checks nothing";
  EXPECT_EQ(valid_rows("default", {"validation.max_batches=0"}), whole);
  EXPECT_THAT(read_file((runs.path() / "tokens" / "train.log").string()),
              HasSubstr("validation: the first 2 of the valid split's"));
  EXPECT_THAT(read_file((runs.path() / "default" / "train.log").string()), Not(HasSubstr("validation: the first")));
}

TEST_F(TrainTest, ValidationMaskProbabilityKeepsTheValidationTaskFixed) {
  TempDir runs;
  auto valid_of = [&](const std::string& name, std::vector<std::string> overrides) {
    overrides.push_back("train.max_updates=2");
    overrides.push_back("validation.max_batches=0");
    const auto summary = train((runs.path() / name).string(), overrides);
    EvalOptions o;
    o.checkpoint = list_checkpoints((runs.path() / name / "checkpoints").string()).back().path;
    const EvalReport report = run_eval(o);
    EXPECT_EQ(report.result.loss(), summary.valid_loss) << name << ": eval must reproduce the run's validation";
    return report.result;
  };
  // validation.mask_probability = 0: validation masks at the training rate.
  const EvalResult at_15 = valid_of("p15", {"masking.probability=0.15", "validation.mask_probability=0"});
  const EvalResult at_40 = valid_of("p40", {"masking.probability=0.4", "validation.mask_probability=0"});
  const EvalResult at_40_valid_15 = valid_of("p40v15", {"masking.probability=0.4", "validation.mask_probability=0.15"});
  EXPECT_GT(at_40.masked, at_15.masked * 2);
  // The same validation positions and targets as the run trained at 15%.
  EXPECT_EQ(at_40_valid_15.masked, at_15.masked);
  EXPECT_EQ(at_40_valid_15.unigram_loss_sum, at_15.unigram_loss_sum);
}

// eval --same-targets masks by each token's place in the split: checkpoints of different n score
// the same tokens (equal digests and counts, the same unigram loss on them), which the block
// masks of validation do not give (issue 50: perplexities compared across n).
TEST_F(TrainTest, SameTargetsScoreTheSameTokensAtEveryN) {
  TempDir runs;
  std::map<int, EvalReport> same, by_block;
  for (const int n : {16, 32, 64}) {
    const std::string run = (runs.path() / ("n" + std::to_string(n))).string();
    train(run, {"data.seq_len=" + std::to_string(n), "train.max_updates=2", "validation.max_batches=1"});
    EvalOptions o;
    o.checkpoint = list_checkpoints(run + "/checkpoints").back().path;
    by_block[n] = run_eval(o);
    EXPECT_FALSE(by_block[n].targets_digest);
    o.same_targets = true;
    same[n] = run_eval(o);
    ASSERT_TRUE(same[n].targets_digest) << n;
  }
  for (const int n : {32, 64}) {
    EXPECT_EQ(*same[n].targets_digest, *same[16].targets_digest) << "n = " << n;
    EXPECT_EQ(same[n].result.masked, same[16].result.masked) << "n = " << n;
    EXPECT_EQ(same[n].result.unigram_loss_sum, same[16].result.unigram_loss_sum) << "n = " << n;
    EXPECT_NE(by_block[n].result.unigram_loss_sum, by_block[16].result.unigram_loss_sum) << "n = " << n;
  }
  // One row a batch: a row's stream masks may outnumber the fixed count a model is sized for by
  // default (such an eval once failed); the batches change, the targets do not.
  EvalOptions one_row;
  one_row.checkpoint = same[16].checkpoint;
  one_row.same_targets = true;
  one_row.batch_size = 1;
  const EvalReport single = run_eval(one_row);
  ASSERT_TRUE(single.targets_digest);
  EXPECT_EQ(*single.targets_digest, *same[16].targets_digest);
  EXPECT_EQ(single.result.masked, same[16].result.masked);
  // On the command line: the digest printed and in the JSON.
  const std::string json = (runs.path() / "eval.json").string();
  const auto r = testing::run_linformer("eval --checkpoint " + same[32].checkpoint + " --same-targets --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string digest = fmt::format("{:016x}", *same[16].targets_digest);
  EXPECT_THAT(r.output, HasSubstr("same targets at any n: the masked tokens' digest is " + digest));
  EXPECT_EQ(nlohmann::json::parse(read_file(json))["targets_digest"], digest);
}

// A checkpoint written before a key moved (finetune.epochs, now train.max_epochs) records the old
// key in its recipe.toml: eval reads it with a warning, while a recipe someone writes is refused.
TEST_F(TrainTest, ACheckpointWrittenBeforeAKeyMovedStillEvaluates) {
  TempDir runs;
  const std::string run = (runs.path() / "run").string();
  train(run, {"train.max_updates=2", "validation.max_batches=1"});
  const std::string checkpoint = list_checkpoints(run + "/checkpoints").back().path;
  EvalOptions o;
  o.checkpoint = checkpoint;
  const EvalReport before = run_eval(o);
  // As the older version wrote it: the key in its section, the checksums over that text.
  const std::string recipe_path = checkpoint + "/recipe.toml";
  std::string recipe = read_file(recipe_path);
  const size_t section = recipe.find("\n[finetune]");
  ASSERT_NE(section, std::string::npos);
  recipe.insert(recipe.find('\n', section + 1) + 1, "epochs = 3\n");
  write_file_atomic(recipe_path, recipe);
  nlohmann::json meta = nlohmann::json::parse(read_file(checkpoint + "/state.json"));
  meta["files"]["recipe.toml"] = crc32_hex(recipe);
  const std::string state = meta.dump(2) + "\n";
  write_file_atomic(checkpoint + "/state.json", state);
  write_file_atomic(checkpoint + "/DONE", "complete\nstate.json crc32 " + crc32_hex(state) + "\n");

  EXPECT_EQ(run_eval(o).result.loss(), before.result.loss());
  const auto r = testing::run_linformer("eval --checkpoint " + checkpoint);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("recipe.toml: 'finetune.epochs' was written by an older linformer (the key is "
                                  "'train.max_epochs' now); ignored"));
  try {
    config::load_recipe(recipe_path);
    FAIL() << "a recipe with a moved key was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("unknown key 'finetune.epochs' (moved to 'train.max_epochs' in a fine-tuning "
                                    "recipe; a pretraining recipe never read it: delete it there)"));
  }
}

TEST_F(TrainTest, EvalAndFillMaskUseTheCheckpointAlone) {
  TempDir runs;
  const std::string run = (runs.path() / "run").string();
  const auto summary = train(run, {"train.max_updates=8", "validation.max_batches=0"});
  const std::string checkpoint = list_checkpoints(run + "/checkpoints").back().path;

  // eval on the valid split reproduces the run's last validation exactly.
  EvalOptions o;
  o.checkpoint = checkpoint;
  const EvalReport valid = run_eval(o);
  EXPECT_EQ(valid.result.loss(), summary.valid_loss);
  EXPECT_GT(valid.result.masked, 0);
  // The unigram baseline on the same masked targets, in the summary, the metrics and eval; on
  // this sample of the valid split it is close to prepare's value for the whole split.
  EXPECT_EQ(valid.result.unigram_perplexity(), summary.valid_unigram_perplexity);
  EXPECT_GT(summary.valid_unigram_perplexity, 1.0);
  const auto meta = nlohmann::json::parse(read_file(dir_->path().string() + "/prepared/meta.json"));
  EXPECT_NEAR(summary.valid_unigram_perplexity / meta["unigram"]["valid_perplexity"].get<double>(), 1.0, 0.2);
  std::istringstream jsonl(read_file(run + "/metrics.jsonl"));
  nlohmann::json last_valid;
  for (std::string line; std::getline(jsonl, line);)
    if (nlohmann::json row = nlohmann::json::parse(line); row["kind"] == "valid") last_valid = row;
  EXPECT_DOUBLE_EQ(last_valid["unigram_perplexity"].get<double>(), summary.valid_unigram_perplexity);
  o.split = "test";
  EXPECT_NE(run_eval(o).result.loss(), summary.valid_loss);

  // Raw text nobody prepared, through the command line.
  const std::string text = runs.write("new.txt", testing::synthetic_text(3, 10, 77));
  auto r = testing::run_linformer("eval --checkpoint " + checkpoint + " --text " + text);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("new.txt (3 documents"));
  EXPECT_THAT(r.output, HasSubstr("perplexity"));
  EXPECT_THAT(r.output, HasSubstr("unigram baseline"));

  // fill-mask: k predictions per mask, probabilities in decreasing order, the filled sequence.
  const auto masks = fill_mask(checkpoint, "kalo <mask> mine <mask>.", 4);
  ASSERT_EQ(masks.size(), 2u);
  for (const auto& predictions : masks) {
    ASSERT_EQ(predictions.size(), 4u);
    double total = 0;
    for (size_t i = 0; i < predictions.size(); ++i) {
      EXPECT_GT(predictions[i].probability, 0.0);
      if (i > 0) {
        EXPECT_LE(predictions[i].probability, predictions[i - 1].probability);
      }
      EXPECT_GE(predictions[i].token_id, 5) << "a special token was predicted";
      total += predictions[i].probability;
    }
    EXPECT_LE(total, 1.0 + 1e-9);
  }
  EXPECT_THAT(masks[1][0].sequence, HasSubstr("kalo <mask> mine"));
  r = testing::run_linformer("fill-mask --checkpoint " + checkpoint + " --top-k 2 \"kalo <mask> mine.\"");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, ::testing::ContainsRegex(" 0\\.[0-9]{4}  '[^']+' +kalo [^<]+ mine\\."));
  r = testing::run_linformer("fill-mask --checkpoint " + checkpoint + " \"no mask here\"");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("has no <mask>"));
  // A run directory stands for its newest checkpoint; any other directory is an error.
  r = testing::run_linformer("eval --checkpoint " + run);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("using the newest checkpoint of run"));
  r = testing::run_linformer("eval --checkpoint " + runs.path().string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("is neither a complete checkpoint directory"));
}

TEST_F(TrainTest, ValidationWithShuffledWordsLogsWhatEvalMeasures) {
  TempDir runs;
  const std::string run = (runs.path() / "run").string();
  train(run, {"train.max_updates=8", "validation.max_batches=0", "validation.shuffle_words=true"});
  std::istringstream jsonl(read_file(run + "/metrics.jsonl"));
  std::vector<nlohmann::json> valid;
  for (std::string line; std::getline(jsonl, line);)
    if (nlohmann::json row = nlohmann::json::parse(line); row["kind"] == "valid") valid.push_back(row);
  ASSERT_EQ(valid.size(), 2u);  // updates 4 and 8
  for (const auto& row : valid) EXPECT_GT(row.value("shuffled_perplexity", 0.0), 1.0) << row.dump();
  EvalOptions o;
  o.checkpoint = list_checkpoints(run + "/checkpoints").back().path;
  o.shuffle_words = true;
  const EvalReport report = run_eval(o);
  EXPECT_DOUBLE_EQ(valid.back()["perplexity"].get<double>(), report.result.perplexity());
  EXPECT_DOUBLE_EQ(valid.back()["shuffled_perplexity"].get<double>(), report.shuffled->perplexity());
  EXPECT_NE(read_file(run + "/metrics.csv").find(",shuffled_perplexity,"), std::string::npos);

  // Off by default: no shuffled scores.
  const std::string plain = (runs.path() / "plain").string();
  train(plain, {"train.max_updates=4"});
  EXPECT_EQ(read_file(plain + "/metrics.jsonl").find("shuffled_perplexity"), std::string::npos);
}

// data.seed keys validation's masks and word shuffles (and the prepared data), `seed` training's
// randomness: runs that vary only `seed` are validated on the same masked tokens, runs that vary
// only data.seed train the same weights, and eval of a checkpoint reproduces its run's validation.
TEST_F(TrainTest, DataSeedKeepsValidationFixedWhileSeedVaries) {
  TempDir runs;
  const auto run_with = [&](const std::string& name, std::vector<std::string> overrides) {
    for (const char* o : {"train.max_updates=4", "validation.max_batches=0", "validation.shuffle_words=true"})
      overrides.push_back(o);
    const std::string dir = (runs.path() / name).string();
    return std::make_pair(dir, train(dir, overrides));
  };
  const auto [seed1, s1] = run_with("seed1", {});
  const auto [seed2, s2] = run_with("seed2_data1", {"seed=2", "data.seed=1"});
  const auto [seed2_data2, s3] = run_with("seed2_data2", {"seed=2"});
  // The same masked targets (the unigram baseline on them is equal) for another model.
  EXPECT_EQ(s1.valid_unigram_perplexity, s2.valid_unigram_perplexity);
  EXPECT_NE(s1.valid_loss, s2.valid_loss);
  EXPECT_FALSE(final_weights(seed1) == final_weights(seed2)) << "seed 2 trained seed 1's weights";
  // The same training, validated on other masks.
  EXPECT_TRUE(final_weights(seed2) == final_weights(seed2_data2)) << "data.seed changed the training";
  EXPECT_NE(s2.valid_unigram_perplexity, s3.valid_unigram_perplexity);
  // eval reads data.seed from the checkpoint's recipe: the run's last validation, ordered and shuffled.
  EvalOptions o;
  o.checkpoint = list_checkpoints(seed2 + "/checkpoints").back().path;
  o.shuffle_words = true;
  const EvalReport report = run_eval(o);
  EXPECT_EQ(report.result.loss(), s2.valid_loss);
  std::istringstream jsonl(read_file(seed2 + "/metrics.jsonl"));
  nlohmann::json last_valid;
  for (std::string line; std::getline(jsonl, line);)
    if (nlohmann::json row = nlohmann::json::parse(line); row["kind"] == "valid") last_valid = row;
  ASSERT_TRUE(report.shuffled.has_value());
  EXPECT_DOUBLE_EQ(last_valid["shuffled_perplexity"].get<double>(), report.shuffled->perplexity());
  // Another seed cannot continue a run: it would read another data order.
  try {
    train(seed1, {"seed=2", "data.seed=1", "train.max_updates=8"}, "auto");
    FAIL() << "resumed seed 1's run with seed 2";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("seed (1 in the checkpoint, 2 now)"));
  }
}

TEST_F(TrainTest, EvalWithShuffledWordsScoresTheSameTargetsInAnotherOrder) {
  TempDir runs;
  const std::string checkpoint = trained_checkpoint((runs.path() / "run").string());
  EvalOptions o;
  o.checkpoint = checkpoint;
  const EvalReport plain = run_eval(o);
  EXPECT_FALSE(plain.shuffled.has_value());
  o.shuffle_words = true;
  const EvalReport both = run_eval(o);
  ASSERT_TRUE(both.shuffled.has_value());
  EXPECT_EQ(both.result.loss_sum, plain.result.loss_sum) << "the ordered evaluation must not change";
  EXPECT_EQ(both.shuffled->masked, plain.result.masked);
  EXPECT_EQ(both.shuffled->unigram_loss_sum, plain.result.unigram_loss_sum) << "not the same targets";
  EXPECT_NE(both.shuffled->loss_sum, plain.result.loss_sum) << "no word moved";

  // The command line reports the same numbers.
  const std::string json = (runs.path() / "eval.json").string();
  const auto r = testing::run_linformer("eval --checkpoint " + checkpoint + " --shuffle-words --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("words shuffled within each sentence: perplexity"));
  const auto j = nlohmann::json::parse(read_file(json));
  EXPECT_DOUBLE_EQ(j["shuffled_words"]["loss"].get<double>(), both.shuffled->loss());
  EXPECT_DOUBLE_EQ(j["word_order_ratio"].get<double>(), both.shuffled->perplexity() / both.result.perplexity());
}

// eval --by-context: the targets split in two groups whose sums are the model's own loss, accuracy
// and unigram baseline (scored from the logits, apart from the model's cross-entropy kernel).
TEST_F(TrainTest, EvalByContextSplitsTheModelsOwnScores) {
  TempDir runs;
  const std::string checkpoint = trained_checkpoint((runs.path() / "run").string());
  EvalOptions o;
  o.checkpoint = checkpoint;
  o.by_context = true;
  const EvalReport report = run_eval(o);
  ASSERT_TRUE(report.by_context.has_value());
  const EvalResult &in = report.by_context->in_context, &out = report.by_context->not_in_context;
  const EvalResult& all = report.result;
  EXPECT_GT(in.masked, 0);
  EXPECT_GT(out.masked, 0);
  EXPECT_EQ(in.masked + out.masked, all.masked);
  EXPECT_NEAR(in.loss_sum + out.loss_sum, all.loss_sum, 1e-5 * all.loss_sum);
  EXPECT_EQ(in.correct + out.correct, all.correct);
  EXPECT_NEAR(in.unigram_loss_sum + out.unigram_loss_sum, all.unigram_loss_sum, 1e-9 * all.unigram_loss_sum);
  o.by_context = false;
  EXPECT_FALSE(run_eval(o).by_context.has_value());

  const std::string json = (runs.path() / "eval.json").string();
  const auto r = testing::run_linformer("eval --checkpoint " + checkpoint + " --by-context --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("  in context: " + std::to_string(in.masked) + " masked tokens"));
  const auto j = nlohmann::json::parse(read_file(json));
  EXPECT_EQ(j["by_context"]["not_in_context"]["masked"].get<int64_t>(), out.masked);
  EXPECT_DOUBLE_EQ(j["by_context"]["in_context"]["perplexity"].get<double>(), in.perplexity());
}

}  // namespace
}  // namespace linformer

#include "linformer/train/checkpoint.h"
#include "linformer/core/fs.h"
#include "linformer/train/resume_plan.h"
#include "model_test_util.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <functional>

namespace linformer {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

struct Fixture {
  ModelSpec spec = testing::tiny_spec();
  Parameters params{spec, MlmModel::parameter_table(spec)};
  config::OptimConfig optim = config::Recipe().optim;
  AdamW adam{params, optim};
  Fixture() {
    params.initialize(3);
    Rng rng(4);
    for (int step = 0; step < 2; ++step) {
      for (size_t i = 0; i < params.grads().numel(); ++i) params.grads().data()[i] = rng.normal();
      adam.step(1e-3);
    }
  }
};

TEST(Checkpoint, RoundTripsParametersMomentsAndState) {
  testing::TempDir dir;
  Fixture a;
  TrainingState state;
  state.update = 42;
  state.micro_step = 84;
  state.tokens = 12345;
  state.epoch = 2;
  state.position = 7;
  state.elapsed_seconds = 3.5;
  state.best_valid_loss = 4.25;
  state.best_update = 40;
  state.validations_since_best = 1;

  const std::string path = write_checkpoint(dir.path().string(), a.params, a.adam, state, "seed = 1\n", "spm bytes");
  EXPECT_EQ(fs::path(path).filename(), "checkpoint_00000042");

  Fixture b;  // other values everywhere until loaded
  b.params.initialize(9);
  b.adam.reset();
  const TrainingState read = read_checkpoint(path, b.params, &b.adam);
  EXPECT_EQ(nlohmann::json(read), nlohmann::json(state));
  EXPECT_EQ(0, std::memcmp(a.params.values().data(), b.params.values().data(), a.params.values().layout().bytes()));
  EXPECT_EQ(
      0, std::memcmp(a.adam.first_moment().data(), b.adam.first_moment().data(), a.params.values().layout().bytes()));
  EXPECT_EQ(
      0, std::memcmp(a.adam.second_moment().data(), b.adam.second_moment().data(), a.params.values().layout().bytes()));
  EXPECT_EQ(b.adam.steps(), 2);
  EXPECT_EQ(read_file(path + "/recipe.toml"), "seed = 1\n");
  EXPECT_EQ(read_file(path + "/tokenizer.model"), "spm bytes");
}

TEST(Checkpoint, NoValidationYetRoundTrips) {
  testing::TempDir dir;
  Fixture a;
  const std::string path = write_checkpoint(dir.path().string(), a.params, a.adam, TrainingState{}, "", "");
  const TrainingState read = read_checkpoint(path, a.params, nullptr);
  EXPECT_TRUE(std::isinf(read.best_valid_loss));
}

TEST(Checkpoint, CorruptionAndIncompleteCheckpointsAreRefused) {
  testing::TempDir dir;
  Fixture a;
  TrainingState s;
  s.update = 1;
  const std::string first = write_checkpoint(dir.path().string(), a.params, a.adam, s, "", "");
  s.update = 2;
  const std::string second = write_checkpoint(dir.path().string(), a.params, a.adam, s, "", "");
  // A crash mid-write leaves a temporary directory and maybe a directory without DONE.
  fs::create_directories(dir.path() / "checkpoint_00000003.tmp.999");
  fs::create_directories(dir.path() / "checkpoint_00000004");
  const auto listed = list_checkpoints(dir.path().string());
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].update, 1);
  EXPECT_EQ(listed[1].update, 2);

  Fixture b;
  try {
    read_checkpoint((dir.path() / "checkpoint_00000004").string(), b.params, &b.adam);
    FAIL() << "an incomplete checkpoint was read";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("incomplete"));
  }
  // Flip one byte of the model file.
  const std::string model = second + "/model.safetensors";
  std::string bytes = read_file(model);
  bytes[bytes.size() - 3] ^= 0x40;
  write_file_atomic(model, bytes);
  try {
    read_checkpoint(second, b.params, &b.adam);
    FAIL() << "a corrupt checkpoint was read";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("checksum mismatch"));
  }
  EXPECT_NO_THROW(read_checkpoint(first, b.params, &b.adam));
}

// state.json is outside input: a field of the wrong type is a linformer::Error naming the file
// and the key (fuzz findings K1 and K2: nlohmann's type_error escaped, and a float read as an
// integer was undefined behaviour out of range and silently truncated inside it).
TEST(Checkpoint, StateFieldsOfTheWrongTypeAreRefused) {
  testing::TempDir dir;
  Fixture a;
  const std::string path = write_checkpoint(dir.path().string(), a.params, a.adam, TrainingState{}, "", "");
  const nlohmann::json good = nlohmann::json::parse(read_file(path + "/state.json"));
  const auto refusal = [&](const std::function<void(nlohmann::json&)>& damage) -> std::string {
    nlohmann::json state = good;
    damage(state);
    write_file_atomic(path + "/state.json", state.dump());
    write_file_atomic(path + "/DONE", "complete\n");  // an older checkpoint's DONE: state.json read unchecked
    try {
      read_checkpoint(path, a.params, nullptr);
    } catch (const Error& e) {
      return e.what();
    }
    return "(read without an error)";
  };
  EXPECT_THAT(refusal([](nlohmann::json& j) { j["format"] = 3; }), HasSubstr("not a linformer checkpoint's state"));
  EXPECT_THAT(refusal([](nlohmann::json& j) { j["format_version"] = "1"; }),
              HasSubstr("checkpoint format version \"1\" is not supported"));
  EXPECT_THAT(refusal([](nlohmann::json& j) { j["state"]["update"] = 2.5; }),
              HasSubstr("state.json: state.update = 2.5 is not an integer"));
  EXPECT_THAT(refusal([](nlohmann::json& j) { j["state"]["update"] = 1e300; }),
              HasSubstr("state.update = 1e+300 is not"));
  EXPECT_THAT(refusal([](nlohmann::json& j) { j["state"]["epoch"] = -1; }),
              HasSubstr("state.epoch = -1 is not a non-negative integer"));
  EXPECT_THAT(refusal([](nlohmann::json& j) { j["state"]["validations_since_best"] = 4294967296; }),
              HasSubstr("validations_since_best = 4294967296 is not an integer"));
  EXPECT_THAT(refusal([](nlohmann::json& j) { j["state"]["tokens"] = "12"; }), HasSubstr("state.tokens = \"12\""));
  EXPECT_EQ(refusal([](nlohmann::json&) {}), "(read without an error)");
}

// DONE records state.json's crc32 (issue 48, item 6): an edited data position was accepted and
// the run continued from it. --resume auto passes over such a checkpoint as over other damage;
// a checkpoint written before the seal (DONE = "complete") is still read, with a warning.
TEST(Checkpoint, AnEditedStateJsonIsRefusedAndResumeAutoPassesOverIt) {
  testing::TempDir dir;
  const std::string run = dir.path().string();
  Fixture a;
  TrainingState s;
  s.update = 4;
  s.position = 399;
  const std::string older = write_checkpoint(run + "/checkpoints", a.params, a.adam, s, "", "");
  s.update = 8;
  const std::string newer = write_checkpoint(run + "/checkpoints", a.params, a.adam, s, "", "");
  const std::string state_path = newer + "/state.json";
  const std::string genuine = read_file(state_path);
  std::string edited = genuine;
  const size_t at = edited.find("\"position\": 399");
  ASSERT_NE(at, std::string::npos);
  edited.replace(at, 15, "\"position\": 1399");
  write_file_atomic(state_path, edited);
  for (const auto& refused :
       std::vector<std::function<void()>>{[&] { verify_checkpoint(newer); }, [&] { peek_checkpoint_state(newer); },
                                          [&] { read_checkpoint(newer, a.params, nullptr); }}) {
    try {
      refused();
      ADD_FAILURE() << "an edited state.json was accepted";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr(state_path + ": checksum mismatch"));
    }
  }
  ResumeRequest auto_resume;
  auto_resume.resume = "auto";
  EXPECT_EQ(plan_resume(auto_resume, run).checkpoint, older);

  // A DONE that is not a marker is damage too; an older checkpoint's DONE reads with a warning.
  write_file_atomic(state_path, genuine);
  write_file_atomic(newer + "/DONE", "complete\nstate.json crc32 zz\n");
  EXPECT_THROW(verify_checkpoint(newer), Error);
  EXPECT_EQ(plan_resume(auto_resume, run).checkpoint, older);
  write_file_atomic(newer + "/DONE", "complete\n");
  testing::LogCapture log;
  EXPECT_EQ(plan_resume(auto_resume, run).checkpoint, newer);
  EXPECT_EQ(peek_checkpoint_state(newer).position, 399u);
  EXPECT_THAT(log.text(), HasSubstr(state_path + " has no checksum"));
}

// A kill while pruning left an empty checkpoint_00000335/ that no later start removed (issue 48,
// item 12): the next start removes numbered checkpoint directories without DONE.
TEST(Checkpoint, UnmarkedCheckpointsLeftByAKilledPruneAreRemovedAtTheNextStart) {
  testing::TempDir dir;
  const std::string checkpoints = (dir.path() / "checkpoints").string();
  Fixture a;
  TrainingState s;
  s.update = 2;
  const std::string kept = write_checkpoint(checkpoints, a.params, a.adam, s, "", "");
  fs::create_directories(checkpoints + "/checkpoint_00000335");
  fs::create_directories(checkpoints + "/checkpoint_00000001");
  write_file_atomic(checkpoints + "/checkpoint_00000001/optimizer.safetensors", "what the deletion left");
  fs::create_directories(checkpoints + "/checkpoint_notes");  // not one of ours
  const config::CheckpointConfig keep = config::Recipe().checkpoint;
  const RunCheckpoints run(checkpoints, keep, "", "", DataIdentity{});
  EXPECT_FALSE(fs::exists(checkpoints + "/checkpoint_00000335"));
  EXPECT_FALSE(fs::exists(checkpoints + "/checkpoint_00000001"));
  EXPECT_TRUE(fs::exists(kept + "/DONE"));
  EXPECT_TRUE(fs::exists(checkpoints + "/checkpoint_notes"));
}

TEST(Checkpoint, RetentionKeepsRecentBestAndMilestones) {
  testing::TempDir dir;
  Fixture a;
  TrainingState s;
  for (int64_t u = 10; u <= 80; u += 10) {
    s.update = u;
    write_checkpoint(dir.path().string(), a.params, a.adam, s, "", "");
  }
  config::CheckpointConfig keep;
  keep.keep_last = 2;
  keep.keep_best = true;
  keep.milestone_every = 40;
  prune_checkpoints(dir.path().string(), keep, /*best_update=*/30);
  std::vector<int64_t> kept;
  for (const auto& c : list_checkpoints(dir.path().string())) kept.push_back(c.update);
  EXPECT_EQ(kept, (std::vector<int64_t>{30, 40, 70, 80}));  // best, milestone, the last two
  keep.keep_best = false;
  keep.milestone_every = 0;
  prune_checkpoints(dir.path().string(), keep, 30);
  kept.clear();
  for (const auto& c : list_checkpoints(dir.path().string())) kept.push_back(c.update);
  EXPECT_EQ(kept, (std::vector<int64_t>{70, 80}));
}

}  // namespace
}  // namespace linformer

#include "linformer/config/suggest.h"

#include <gtest/gtest.h>

namespace linformer::config {
namespace {

TEST(EditDistance, CountsEditsAndAdjacentSwaps) {
  EXPECT_EQ(edit_distance("", ""), 0);
  EXPECT_EQ(edit_distance("abc", ""), 3);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3);
  EXPECT_EQ(edit_distance("modle", "model"), 1);  // one swap
  EXPECT_EQ(edit_distance("model.kk", "model.k"), 1);
}

TEST(ClosestMatch, SuggestsLikelyTypos) {
  const std::vector<std::string> keys = {"model", "model.k", "model.layers", "data.seq_len", "optim.lr"};
  EXPECT_EQ(closest_match("model.kk", keys), "model.k");
  EXPECT_EQ(closest_match("modle", keys), "model");
  EXPECT_EQ(closest_match("model.layer", keys), "model.layers");
  EXPECT_EQ(closest_match("data.seqlen", keys), "data.seq_len");
}

TEST(ClosestMatch, SuggestsTheRightSectionForAKnownLeaf) {
  const std::vector<std::string> keys = {"seed", "model.k", "model.heads", "data.seq_len", "data.seed"};
  // Before a key of its own section a few edits away (data.seed is 3 from data.heads).
  EXPECT_EQ(closest_match("data.heads", keys), "model.heads");
  EXPECT_EQ(closest_match("model.seed", keys), "seed");  // a top-level key too
}

TEST(ClosestMatch, NamesTheNewPlaceOfAMovedKey) {
  const std::vector<std::string> keys = {"train.max_epochs", "train.max_updates", "finetune.train"};
  EXPECT_EQ(closest_match("finetune.epochs", keys), "train.max_epochs");
}

TEST(ClosestMatch, StaysQuietWhenNothingIsClose) {
  const std::vector<std::string> keys = {"model.k", "model.layers"};
  EXPECT_EQ(closest_match("completely_unrelated", keys), std::nullopt);
}

}  // namespace
}  // namespace linformer::config

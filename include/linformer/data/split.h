#pragma once
// Train/valid/test assignment by document, deterministic in (seed, document index).
//
// Document i goes to valid when u(i) < valid_fraction, to test when
// valid_fraction ≤ u(i) < valid_fraction + test_fraction, else to train, where
// u(i) ∈ [0, 1) is a hash of (seed, i). A small corpus could leave a held-out
// split empty by chance, so with at least 3 documents a split whose fraction is
// positive always gets one: the document with the smallest u for valid, the
// largest for test.

#include <array>
#include <cstdint>
#include <string_view>

namespace linformer::data {

enum class Split { train = 0, valid = 1, test = 2 };
inline constexpr std::array<Split, 3> kSplits = {Split::train, Split::valid, Split::test};
std::string_view split_name(Split s);  // "train", "valid", "test"

class SplitPlan {
 public:
  // O(documents) time once, O(1) memory.
  SplitPlan(int64_t documents, double valid_fraction, double test_fraction, uint64_t seed);
  Split of(int64_t document) const;
  // u(i): the document's uniform draw.
  double draw(int64_t document) const;

 private:
  int64_t documents_;
  double valid_fraction_, test_fraction_;
  uint64_t seed_;
  int64_t forced_valid_ = -1, forced_test_ = -1;
};

}  // namespace linformer::data

#include "linformer/data/split.h"

#include "linformer/core/check.h"
#include "linformer/core/rng.h"

namespace linformer::data {

namespace {
constexpr uint64_t kSplitStream = 0x53504C4954ull;  // "SPLIT"
}

std::string_view split_name(Split s) {
  switch (s) {
    case Split::train:
      return "train";
    case Split::valid:
      return "valid";
    case Split::test:
      return "test";
  }
  return "?";
}

SplitPlan::SplitPlan(int64_t documents, double valid_fraction, double test_fraction, uint64_t seed)
    : documents_(documents), valid_fraction_(valid_fraction), test_fraction_(test_fraction), seed_(seed) {
  LF_CHECK(valid_fraction >= 0 && test_fraction >= 0 && valid_fraction + test_fraction < 1,
           "split fractions valid {} and test {} must be ≥ 0 and leave documents for training", valid_fraction,
           test_fraction);
  if (documents < 3) return;
  int64_t valid = 0, test = 0, lowest = 0, highest = 0;
  for (int64_t i = 0; i < documents; ++i) {
    const double u = draw(i);
    valid += u < valid_fraction;
    test += u >= valid_fraction && u < valid_fraction + test_fraction;
    if (u < draw(lowest)) lowest = i;
    if (u > draw(highest)) highest = i;
  }
  if (valid_fraction > 0 && valid == 0) {
    forced_valid_ = lowest;
    const double u = draw(lowest);
    if (u >= valid_fraction && u < valid_fraction + test_fraction) --test;  // taken from test
  }
  if (test_fraction > 0 && test == 0 && highest != forced_valid_) forced_test_ = highest;
}

double SplitPlan::draw(int64_t document) const {
  const uint64_t h = stream_id({kSplitStream, seed_, static_cast<uint64_t>(document)});
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

Split SplitPlan::of(int64_t document) const {
  LF_CHECK(document >= 0 && document < documents_, "document {} outside [0, {})", document, documents_);
  if (document == forced_valid_) return Split::valid;
  if (document == forced_test_) return Split::test;
  const double u = draw(document);
  if (u < valid_fraction_) return Split::valid;
  if (u < valid_fraction_ + test_fraction_) return Split::test;
  return Split::train;
}

}  // namespace linformer::data

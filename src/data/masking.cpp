#include "linformer/data/masking.h"

#include "linformer/core/check.h"
#include "linformer/data/special_tokens.h"

#include <algorithm>
#include <cmath>

namespace linformer::data {

namespace {
constexpr uint64_t kMaskStream = 0x4D41534B494E47ull;        // "MASKING"
constexpr uint64_t kStreamMaskStream = 0x4D534B53545245ull;  // "MSKSTRE": mask_row_by_stream
}  // namespace

Masker::Masker(const config::MaskingConfig& config, int vocab_size, std::vector<uint8_t> word_starts, uint64_t seed)
    : config_(config), vocab_size_(vocab_size), word_starts_(std::move(word_starts)), seed_(seed) {
  LF_CHECK(vocab_size > kFirstOrdinaryId, "vocabulary of {} has no ordinary tokens", vocab_size);
  LF_CHECK(config.probability >= 0 && config.probability <= 1, "masking.probability {} outside [0, 1]",
           config.probability);
  LF_CHECK(config.mask_fraction >= 0 && config.random_fraction >= 0 &&
               config.mask_fraction + config.random_fraction <= 1 + 1e-12,
           "masking.mask_fraction {} + masking.random_fraction {} must be within [0, 1]", config.mask_fraction,
           config.random_fraction);
  LF_CHECK(!config.whole_word || static_cast<int>(word_starts_.size()) == vocab_size,
           "whole-word masking needs the word starts of all {} pieces, got {}", vocab_size, word_starts_.size());
}

void Masker::find_units(const int32_t* row, int length, std::vector<int>& cand, std::vector<int>& unit_begin) const {
  cand.clear();
  unit_begin.clear();
  int previous = -2;
  for (int t = 0; t < length; ++t) {
    const int32_t id = row[t];
    if (id < kFirstOrdinaryId) continue;
    const bool continues_word = config_.whole_word && previous == t - 1 && !word_starts_[static_cast<size_t>(id)];
    if (!continues_word) unit_begin.push_back(static_cast<int>(cand.size()));
    cand.push_back(t);
    previous = t;
  }
  unit_begin.push_back(static_cast<int>(cand.size()));
}

void Masker::corrupt_unit(int32_t* row, const std::vector<int>& cand, const std::vector<int>& unit_begin, int u,
                          double r, Rng& rng, int64_t offset, std::vector<int64_t>& positions,
                          std::vector<int32_t>& targets) const {
  const uint64_t ordinary = static_cast<uint64_t>(vocab_size_ - kFirstOrdinaryId);
  for (int c = unit_begin[static_cast<size_t>(u)]; c < unit_begin[static_cast<size_t>(u) + 1]; ++c) {
    const int t = cand[static_cast<size_t>(c)];
    positions.push_back(offset + t);
    targets.push_back(row[t]);
    if (r < config_.mask_fraction)
      row[t] = kMaskId;
    else if (r < config_.mask_fraction + config_.random_fraction)
      row[t] = kFirstOrdinaryId + static_cast<int32_t>(rng.below(ordinary));
  }
}

void Masker::mask_row(int32_t* row, int length, uint64_t epoch, uint64_t sample, int64_t offset,
                      std::vector<int64_t>& positions, std::vector<int32_t>& targets) const {
  Rng rng(seed_, stream_id({kMaskStream, epoch, sample}));
  thread_local std::vector<int> cand, unit_begin, order;
  find_units(row, length, cand, unit_begin);
  const int units = static_cast<int>(unit_begin.size()) - 1;
  if (units == 0) return;

  const int chosen = std::min(units, static_cast<int>(std::floor(config_.probability * units + rng.uniform_double())));
  // Partial Fisher-Yates: the first `chosen` entries of `order` are a uniform sample.
  order.resize(static_cast<size_t>(units));
  for (int u = 0; u < units; ++u) order[static_cast<size_t>(u)] = u;
  for (int i = 0; i < chosen; ++i) {
    const int j = i + static_cast<int>(rng.below(static_cast<uint64_t>(units - i)));
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(j)]);
  }
  std::sort(order.begin(), order.begin() + chosen);
  for (int i = 0; i < chosen; ++i)
    corrupt_unit(row, cand, unit_begin, order[static_cast<size_t>(i)], rng.uniform_double(), rng, offset, positions,
                 targets);
}

void Masker::mask_row_by_stream(int32_t* row, int length, uint64_t stream_begin, int64_t offset,
                                std::vector<int64_t>& positions, std::vector<int32_t>& targets) const {
  thread_local std::vector<int> cand, unit_begin;
  find_units(row, length, cand, unit_begin);
  const int units = static_cast<int>(unit_begin.size()) - 1;
  for (int u = 0; u < units; ++u) {
    const int first = cand[static_cast<size_t>(unit_begin[static_cast<size_t>(u)])];  // ≥ 1: row[0] is <s>
    Rng rng(seed_, stream_id({kStreamMaskStream, stream_begin + static_cast<uint64_t>(first) - 1}));
    if (rng.uniform_double() >= config_.probability) continue;
    corrupt_unit(row, cand, unit_begin, u, rng.uniform_double(), rng, offset, positions, targets);
  }
}

config::MaskingConfig validation_masking(const config::Recipe& recipe) {
  config::MaskingConfig masking = recipe.masking;
  if (recipe.validation.mask_probability > 0) masking.probability = recipe.validation.mask_probability;
  return masking;
}

}  // namespace linformer::data

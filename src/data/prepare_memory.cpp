#include "linformer/data/prepare_memory.h"

#include "linformer/core/check.h"

#include <fmt/format.h>

namespace linformer::data {

double tokenizer_training_bytes(uint64_t sample_bytes, int64_t sample_sentences) {
  return kPrepareBaseBytes + kTrainerBytesPerSampleByte * static_cast<double>(sample_bytes) +
         kTrainerBytesPerSentence * static_cast<double>(sample_sentences);
}

void check_tokenizer_fits(uint64_t sample_bytes, int64_t sample_sentences, const AvailableMemory& available) {
  if (!available.known()) return;
  const double needed = tokenizer_training_bytes(sample_bytes, sample_sentences);
  if (needed <= static_cast<double>(available.bytes)) return;
  LF_FAIL(
      "training the tokenizer on a sample of {}{} needs about {}, more than the {} available ({}): "
      "lower data.tokenizer_max_bytes (the trainer takes about {:.0f} bytes of memory per byte of sample)",
      format_bytes(static_cast<double>(sample_bytes)),
      sample_sentences > 0 ? fmt::format(" ({} sentences)", sample_sentences)
                           : std::string(" (at most: data.tokenizer_max_bytes, or the corpus's size)"),
      format_bytes(needed), format_bytes(static_cast<double>(available.bytes)), available.source,
      kTrainerBytesPerSampleByte);
}

}  // namespace linformer::data

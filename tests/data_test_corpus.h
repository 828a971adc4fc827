#pragma once
// A deterministic made-up corpus for data tests: sentences of 4-12 words drawn
// from 300 words of 2-4 syllables. Small enough to train a vocabulary of a few
// hundred pieces in a fraction of a second.

#include "linformer/core/rng.h"

#include <string>
#include <vector>

namespace linformer::testing {

inline std::vector<std::string> synthetic_sentences(int count, uint64_t seed) {
  const char* syllables[] = {"ka", "lo", "mi", "ne", "tru", "sa", "vo", "ri", "pel", "dun", "ex", "qua"};
  std::vector<std::string> words;
  Rng word_rng(12345);
  for (int i = 0; i < 300; ++i) {
    std::string w;
    for (uint64_t k = 0, n = 2 + word_rng.below(3); k < n; ++k) w += syllables[word_rng.below(12)];
    words.push_back(w);
  }
  Rng rng(seed);
  std::vector<std::string> out;
  for (int s = 0; s < count; ++s) {
    std::string sentence;
    const int n = 4 + static_cast<int>(rng.below(9));
    for (int w = 0; w < n; ++w) sentence += (w ? " " : "") + words[rng.below(words.size())];
    out.push_back(sentence + ".");
  }
  return out;
}

// `documents` documents of `sentences_per_document` lines, blank-line separated.
inline std::string synthetic_text(int documents, int sentences_per_document, uint64_t seed) {
  std::string text;
  const auto sentences = synthetic_sentences(documents * sentences_per_document, seed);
  for (int d = 0; d < documents; ++d) {
    if (d) text += "\n";
    for (int s = 0; s < sentences_per_document; ++s) text += sentences[d * sentences_per_document + s] + "\n";
  }
  return text;
}

}  // namespace linformer::testing

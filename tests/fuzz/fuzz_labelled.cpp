// Fuzz target: fine-tuning's labelled readers. data::read_labelled_file (JSON lines with a text
// and a label field) and data::read_documents_to_classify (JSON lines or a plain-text document),
// tokenizing with a small SentencePiece model trained once at start-up.
//
// Input: byte 0 chooses the reader, the rest is the file.
//   bits 0-1  0: read_labelled_file, the labels the file's own; 1: the same with the labels
//             {"a", "b", "0"} given (a validation file); 2: read_documents_to_classify on
//             docs.jsonl; 3: on doc.txt (one document)
//   bits 2-3  max_len: 2, 5, 64 or 512 tokens
// Invariants of an accepted set (labelled.h): the offsets tile the tokens, every document holds
// <s> and at least one more token and at most max_len, every label id names a label, derived
// labels are sorted, distinct and at least two.

#include "fuzz_support.h"
#include "linformer/data/labelled.h"
#include "linformer/data/special_tokens.h"

#include <algorithm>
#include <string>
#include <vector>

using namespace linformer;

namespace {

const data::Tokenizer& tokenizer() {
  static const data::Tokenizer t = [] {
    std::vector<std::string> sentences;
    for (int i = 0; i < 400; ++i)
      sentences.push_back("ka lo mi " + std::to_string(i) + " the quick brown fox jumps over the lazy dog");
    data::TokenizerTrainOptions o;
    o.vocab_size = 60;
    return data::Tokenizer::from_serialized(data::train_tokenizer(std::move(sentences), o));
  }();
  return t;
}

void check_set(const data::LabelledSet& set, int max_len, bool labels_derived) {
  FUZZ_ASSERT(set.offsets.size() == static_cast<size_t>(set.size()) + 1 && set.offsets.front() == 0 &&
                  set.offsets.back() == static_cast<int64_t>(set.tokens.size()),
              "offsets do not tile the {} tokens of {} documents", set.tokens.size(), set.size());
  for (int64_t d = 0; d < set.size(); ++d) {
    const int64_t length = set.offsets[d + 1] - set.offsets[d];
    FUZZ_ASSERT(length >= 2 && length <= max_len, "document {} has {} tokens (max_len {})", d, length, max_len);
    FUZZ_ASSERT(set.tokens[set.offsets[d]] == data::kBosId, "document {} does not start with <s>", d);
    FUZZ_ASSERT(set.label_ids[d] >= 0 && static_cast<size_t>(set.label_ids[d]) < std::max<size_t>(set.labels.size(), 1),
                "document {} has label id {} of {} labels", d, set.label_ids[d], set.labels.size());
  }
  if (labels_derived)
    FUZZ_ASSERT(set.labels.size() >= 2 && std::is_sorted(set.labels.begin(), set.labels.end()) &&
                    std::adjacent_find(set.labels.begin(), set.labels.end()) == set.labels.end(),
                "derived labels are not two or more, sorted and distinct ({})", set.labels.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int mode = data[0] & 3;
  const int max_len = std::vector<int>{2, 5, 64, 512}[(data[0] >> 2) & 3];
  const std::string path = fuzz::scratch().file(mode == 3 ? "doc.txt" : "docs.jsonl");
  fuzz::write_bytes(path, fuzz::as_text(data + 1, size - 1));
  const data::LabelledFileOptions options{"text", "label", max_len};
  fuzz::accepts([&] {
    if (mode < 2) {
      const std::vector<std::string> known =
          mode == 1 ? std::vector<std::string>{"a", "b", "0"} : std::vector<std::string>{};
      check_set(data::read_labelled_file(path, tokenizer(), options, known), max_len, mode == 0);
    } else {
      std::vector<std::string> sources;
      const data::LabelledSet set = data::read_documents_to_classify({path}, tokenizer(), options, sources);
      FUZZ_ASSERT(sources.size() == static_cast<size_t>(set.size()), "{} sources for {} documents", sources.size(),
                  set.size());
      check_set(set, max_len, false);
    }
  });
  return 0;
}

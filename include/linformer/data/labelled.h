#pragma once
// Labelled documents for sequence classification, and their batches.
//
// A labelled file is JSON lines (plain or gzip), one document per line: a text field and a
// label field (a string, or an integer taken as its decimal string); or a folder with one
// subfolder per label, each of its files a plain-text document (aclImdb's layout). A document
// becomes
//   <s> line₁ </s> line₂ </s> …       (the text's lines, as pretraining saw its sentences)
// cut to max_len tokens. The training file decides the label set (sorted names, ids in that
// order); validation and test files must use labels from it.
//
// Batches: each epoch visits the documents in a permutation seeded by (seed, epoch) (or in
// file order), B at a time; the last batch of an epoch may be smaller. The state is
// BatcherState{epoch, position}, as for pretraining, so a resumed run continues exactly.

#include "linformer/data/batcher.h"
#include "linformer/data/tokenizer.h"

#include <cstdint>
#include <string>
#include <vector>

namespace linformer::data {

struct LabelledFileOptions {
  std::string text_field = "text";
  std::string label_field = "label";
  int max_len = 512;  // tokens per document, <s> included
};

struct LabelledSet {
  std::string path;
  std::vector<std::string> labels;  // (L) label names; a label id indexes them
  std::vector<int32_t> tokens;      // every document's ids, back to back
  std::vector<int64_t> offsets;     // (N + 1) document d is tokens[offsets[d], offsets[d+1])
  std::vector<int32_t> label_ids;   // (N)
  int64_t truncated = 0;            // documents cut to max_len

  int64_t size() const { return static_cast<int64_t>(label_ids.size()); }
  std::vector<int64_t> label_counts() const;  // (L) documents per label
};

// Reads and tokenizes `path`. `known_labels` empty: the labels are this file's (sorted);
// otherwise every label must be one of them (a validation or test file).
LabelledSet read_labelled_file(const std::string& path, const Tokenizer& tokenizer, const LabelledFileOptions& options,
                               const std::vector<std::string>& known_labels = {});

// Documents to classify, unlabelled (label ids 0, `labels` empty): each line of a JSON-lines
// file (.jsonl, .json, either .gz) whose text field is read, and every other file as one
// plain-text document. sources[d] names where document d came from ("file" or "file:line").
LabelledSet read_documents_to_classify(const std::vector<std::string>& paths, const Tokenizer& tokenizer,
                                       const LabelledFileOptions& options, std::vector<std::string>& sources);

// One batch. Axes: B documents, T = the longest of them (≤ max_len).
struct LabelledBatch {
  int64_t rows = 0, seq_len = 0;   // B, T
  std::vector<int32_t> ids;        // (B, T), <pad> after each row's length
  std::vector<int32_t> lengths;    // (B)
  std::vector<int32_t> labels;     // (B)
  std::vector<int64_t> documents;  // (B) index of each row's document in the set
};

class LabelledBatcher {
 public:
  // Keeps a reference to `set`: it must outlive the batcher.
  LabelledBatcher(const LabelledSet& set, int batch_size, bool shuffle, uint64_t seed);

  int64_t batches_per_epoch() const { return batches_per_epoch_; }
  const BatcherState& state() const { return state_; }
  void set_state(const BatcherState& state);
  // The batch at state(), then advances state() (to batch 0 of the next epoch after the last one).
  void next(LabelledBatch& batch);

 private:
  const std::vector<int64_t>& order(uint64_t epoch);

  const LabelledSet& set_;
  int batch_size_;
  bool shuffle_;
  uint64_t seed_;
  int64_t batches_per_epoch_;
  BatcherState state_;
  uint64_t order_epoch_ = UINT64_MAX;
  std::vector<int64_t> order_;
};

}  // namespace linformer::data

#pragma once
// `linformer classify`: a fine-tuned checkpoint's label and label probabilities for each
// document, as JSON lines.

#include <ostream>
#include <string>
#include <vector>

namespace linformer {

struct ClassifyOptions {
  std::string checkpoint;          // a checkpoint directory of `linformer finetune`
  std::vector<std::string> files;  // JSON lines (.jsonl/.json, .gz) or plain-text documents
  std::string text_field = "text";
  int batch_size = 8;
};

// Writes one JSON object per document to `out`: {"source", "label", "probabilities": {label: p}}.
// Returns the number of documents.
int64_t run_classify(const ClassifyOptions& options, std::ostream& out);

}  // namespace linformer

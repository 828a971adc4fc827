#pragma once
// A classifier evaluated over every document of a labelled set: loss, accuracy, macro F1 and
// the confusion matrix; optionally each document's label probabilities (classify).

#include "linformer/data/labelled.h"
#include "linformer/model/classifier_model.h"

#include <cstdint>
#include <vector>

namespace linformer {

struct ClassificationScores {
  int64_t labels = 0;  // L
  int64_t documents = 0, correct = 0;
  double loss_sum = 0;             // Σ cross-entropy, nats
  std::vector<int64_t> confusion;  // (L, L): [true label][predicted label]

  double loss() const { return documents ? loss_sum / static_cast<double>(documents) : 0.0; }
  double accuracy() const { return documents ? static_cast<double>(correct) / static_cast<double>(documents) : 0.0; }
  // F1 = 2TP / (2TP + FP + FN) per label, averaged over the labels that occur in the set or in
  // the predictions (a label absent from both has no F1).
  double macro_f1() const;
};

// Every document of `set` (or those of its first max_batches batches, when > 0), in file order,
// `batch_size` at a time, without dropout. With `probabilities`, it receives softmax(logits) per
// document: (N, L).
ClassificationScores evaluate_classifier(ClassifierModel& model, const data::LabelledSet& set, int batch_size,
                                         std::vector<float>* probabilities = nullptr, int64_t max_batches = 0);

}  // namespace linformer

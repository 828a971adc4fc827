#include "linformer/finetune/classification_eval.h"

#include <algorithm>
#include <cmath>

namespace linformer {

double ClassificationScores::macro_f1() const {
  double sum = 0;
  int64_t counted = 0;
  for (int64_t l = 0; l < labels; ++l) {
    int64_t true_positives = confusion[l * labels + l], false_positives = 0, false_negatives = 0;
    for (int64_t o = 0; o < labels; ++o) {
      if (o == l) continue;
      false_positives += confusion[o * labels + l];
      false_negatives += confusion[l * labels + o];
    }
    const int64_t denominator = 2 * true_positives + false_positives + false_negatives;
    if (denominator == 0) continue;
    sum += 2.0 * static_cast<double>(true_positives) / static_cast<double>(denominator);
    ++counted;
  }
  return counted ? sum / static_cast<double>(counted) : 0.0;
}

ClassificationScores evaluate_classifier(ClassifierModel& model, const data::LabelledSet& set, int batch_size,
                                         std::vector<float>* probabilities, int64_t max_batches) {
  ClassificationScores scores;
  scores.labels = model.labels();
  const int64_t L = scores.labels;
  scores.confusion.assign(static_cast<size_t>(L * L), 0);
  if (probabilities) probabilities->assign(static_cast<size_t>(set.size() * L), 0.0f);
  data::LabelledBatcher batches(set, batch_size, /*shuffle=*/false, 0);
  data::LabelledBatch batch;
  const Pass eval{false, 0, 0};
  const int64_t count =
      max_batches > 0 ? std::min(max_batches, batches.batches_per_epoch()) : batches.batches_per_epoch();
  for (int64_t i = 0; i < count; ++i) {
    batches.next(batch);
    const ClassifierResult r =
        model.forward({batch.rows, batch.seq_len, batch.ids.data(), batch.lengths.data(), batch.labels.data()}, eval);
    scores.documents += r.documents;
    scores.correct += r.correct;
    scores.loss_sum += r.loss_sum;
    const float* logits = model.logits().data();  // (B, L)
    for (int64_t b = 0; b < batch.rows; ++b) {
      const float* row = logits + b * L;
      const int64_t predicted = std::max_element(row, row + L) - row;
      ++scores.confusion[batch.labels[b] * L + predicted];
      if (!probabilities) continue;
      float* out = probabilities->data() + batch.documents[b] * L;
      double total = 0;
      for (int64_t l = 0; l < L; ++l) total += out[l] = std::exp(row[l] - row[predicted]);
      for (int64_t l = 0; l < L; ++l) out[l] = static_cast<float>(out[l] / total);
    }
  }
  return scores;
}

}  // namespace linformer

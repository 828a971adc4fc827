#include "linformer/infer/context_breakdown.h"

#include "linformer/core/check.h"

#include <algorithm>
#include <cmath>

namespace linformer {

void ContextBreakdown::add(const data::Batch& batch, TensorView<const float> logits,
                           const data::UnigramModel* unigram) {
  const int64_t M = batch.targets(), V = logits.size(1), n = batch.seq_len;
  LF_CHECK(logits.size(0) == M, "{} rows of logits for {} targets", logits.size(0), M);
  for (int64_t j = 0; j < M; ++j) {
    const int64_t flat = batch.target_positions[static_cast<size_t>(j)];
    const int64_t row = flat / n, t = flat % n;
    const int32_t target = batch.target_ids[static_cast<size_t>(j)];
    const int32_t* input = batch.input.data() + row * n;  // (n) ids after masking
    const int64_t length = batch.lengths[static_cast<size_t>(row)];
    bool copyable = false;
    for (int64_t u = 0; u < length && !copyable; ++u) copyable = u != t && input[u] == target;

    const float* z = logits.data() + j * V;  // (V)
    const double max = *std::max_element(z, z + V);
    double sum = 0;
    for (int64_t v = 0; v < V; ++v) sum += std::exp(static_cast<double>(z[v]) - max);
    EvalResult& g = copyable ? in_context : not_in_context;
    g.loss_sum += std::log(sum) - (static_cast<double>(z[target]) - max);
    g.correct += std::max_element(z, z + V) - z == target;
    ++g.masked;
    if (unigram) g.unigram_loss_sum += unigram->nll(target);
  }
}

}  // namespace linformer

#pragma once
// The sequence classifier: the encoder and the RoBERTa classification head on the first
// position's final state, with the cross-entropy over the batch's documents. Fine-tuning
// loads a pretrained encoder into it (the MLM head's tensors are not part of it).
//
// With a frozen encoder, only the head has gradients: backward stops at the encoder's output.

#include "linformer/layers/classification_head.h"
#include "linformer/model/encoder.h"
#include "linformer/model/stage_times.h"
#include "linformer/nn/parameters.h"

#include <memory>
#include <string>
#include <vector>

namespace linformer {

// One batch of labelled documents (the data pipeline owns the memory).
struct ClassifierBatchView {
  int64_t B = 0, T = 0;
  const int32_t* ids = nullptr;      // (B, T); <pad> after each row's length
  const int32_t* lengths = nullptr;  // (B); 1 ≤ lengths[b] ≤ T
  const int32_t* labels = nullptr;   // (B) label ids
};

struct ClassifierResult {
  double loss_sum = 0;  // Σ cross-entropy over the documents, nats
  int64_t correct = 0;  // documents whose argmax label is right
  int64_t documents = 0;
};

class ClassifierModel {
 public:
  ClassifierModel(const ModelSpec& spec, int64_t labels, int64_t max_batch, float classifier_dropout,
                  bool freeze_encoder, WorkspaceUse use = WorkspaceUse::training);

  // The encoder's tensors, then classifier.dense and classifier.out; the encoder's are not
  // trainable when frozen.
  static ParameterTable parameter_table(const ModelSpec& spec, int64_t labels, bool freeze_encoder);
  static double forward_matmul_flops(const ModelSpec& spec, int64_t B, int64_t T, int64_t labels);
  // Bytes of activations such a model would allocate, found without allocating them.
  static size_t planned_activation_bytes(const ModelSpec& spec, int64_t labels, int64_t max_batch, WorkspaceUse use);

  const ModelSpec& spec() const { return spec_; }
  Parameters& params() { return params_; }
  const Parameters& params() const { return params_; }
  int64_t labels() const { return labels_; }
  size_t activation_bytes() const { return ws_.bytes(); }

  // Loss only; afterwards logits() holds the batch's (B, labels).
  ClassifierResult forward(const ClassifierBatchView& batch, const Pass& pass);
  // Loss and gradients: the gradient of grad_scale · loss_sum ACCUMULATES into params().grads().
  ClassifierResult forward_backward(const ClassifierBatchView& batch, const Pass& pass, float grad_scale);
  TensorView<const float> logits() const;  // (B, labels), after forward()

 private:
  struct PlanOnly {};
  ClassifierModel(const ModelSpec& spec, int64_t labels, int64_t max_batch, float classifier_dropout,
                  bool freeze_encoder, WorkspaceUse use, PlanOnly);
  void check_batch(const ClassifierBatchView& batch) const;
  ClassifierResult run_forward(const ClassifierBatchView& batch, const Pass& pass, float grad_scale);

  ModelSpec spec_;
  int64_t labels_, max_batch_;
  bool freeze_encoder_;
  Parameters params_;
  Workspace ws_;
  StageTimer timer_;
  Encoder encoder_;
  ClassificationHead head_;
  int64_t last_batch_ = 0;
};

}  // namespace linformer

#pragma once
// The RoBERTa sequence-classification head, on the first position's final state:
//   h = x[:, 0] (B, C); p = dense(h) (B, C); t = tanh(p); u = dropout(t); logits = out(u) (B, L)
// with the cross-entropy over the B sequences, whose gradient replaces the logits in place.
// Fine-tuning puts it on the pretrained encoder in place of the MLM head.

#include "linformer/kernels/cross_entropy.h"
#include "linformer/layers/linear.h"
#include "linformer/layers/pass.h"
#include "linformer/nn/workspace.h"

namespace linformer {

class ClassificationHead {
 public:
  ClassificationHead(const Parameters& params, Workspace& ws, int64_t max_batch, float dropout);
  // classifier.dense (C, C) and classifier.out (labels, C), as fairseq's classification_heads.
  static void declare(ParameterTable& table, int64_t C, int64_t labels);
  // Matmul FLOPs over B sequences: dense and out.
  static double forward_flops(double B, double C, double labels) {
    return Linear::forward_flops(B, C, C) + Linear::forward_flops(B, labels, C);
  }
  int64_t labels() const { return out_.out(); }

  // x (B, T, C); targets (B) label ids. Leaves the logits in logits(B) when grad_scale == 0;
  // otherwise replaces them with the gradient of grad_scale · (Σ cross-entropy).
  CrossEntropyResult forward(TensorView<const float> x, const int32_t* targets, float grad_scale, const Pass& pass);
  // Overwrites dx (B, T, C): zero except at each sequence's first position. Accumulates the
  // head's parameter gradients.
  void backward(TensorView<float> dx, const Pass& pass);

  TensorView<float> logits(int64_t B) const;

 private:
  const Workspace& ws_;
  Linear dense_, out_;
  float dropout_;
  // Caches: (B, C) ×3 (first states, tanh output, its dropped copy), (B, L).
  Buffer<float> h_, t_, u_, logits_;
  Buffer<float> d_a_, d_b_;  // shared scratch (B, C)
};

}  // namespace linformer

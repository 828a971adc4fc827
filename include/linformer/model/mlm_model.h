#pragma once
// The masked-LM model: the encoder (embedding, L blocks, pre-LN's final LayerNorm) and the
// MLM head at the masked positions. Stages timed: the encoder's, then "mlm head + loss".
//
// Capacity (largest batch, largest number of masked positions) is fixed at
// construction; every buffer is allocated then, none during a step.

#include "linformer/layers/mlm_head.h"
#include "linformer/model/encoder.h"
#include "linformer/model/stage_times.h"
#include "linformer/nn/parameters.h"

#include <memory>
#include <string>
#include <vector>

namespace linformer {

// One batch, as the model reads it (the data pipeline owns the memory).
struct MlmBatchView {
  int64_t B = 0, T = 0;
  const int32_t* ids = nullptr;               // (B, T); <pad> after each row's length
  const int32_t* lengths = nullptr;           // (B); 1 ≤ lengths[b] ≤ T
  int64_t M = 0;                              // masked positions
  const int32_t* masked_positions = nullptr;  // (M) flat b·T + t, at real tokens
  const int32_t* targets = nullptr;           // (M) original ids
};

struct StepResult {
  double loss_sum = 0;  // Σ cross-entropy over the masked positions, nats
  int64_t correct = 0;  // masked positions predicted right (argmax)
  int64_t masked = 0;   // M
};

class MlmModel {
 public:
  // An inference model (WorkspaceUse::inference) has forward() only and keeps one
  // layer's activations at a time.
  MlmModel(const ModelSpec& spec, int64_t max_batch, int64_t max_masked, WorkspaceUse use = WorkspaceUse::training);

  // The model's parameters, in arena order, as its layers declare them.
  static ParameterTable parameter_table(const ModelSpec& spec);
  // Matmul FLOPs of one forward pass over B rows of T tokens with M masked positions (backward
  // takes twice as many), as the layers count them.
  // last_rows: the last block's rows per sequence (last_block_rows()), 0 for all T.
  static double forward_matmul_flops(const ModelSpec& spec, int64_t B, int64_t T, int64_t M, int64_t last_rows = 0);

  // Bytes of activations such a model would allocate, found without allocating them
  // (bench attention sizes its batches with it). Builds the parameters.
  static size_t planned_activation_bytes(const ModelSpec& spec, int64_t max_batch, int64_t max_masked,
                                         WorkspaceUse use);

  const ModelSpec& spec() const { return spec_; }
  Parameters& params() { return params_; }
  const Parameters& params() const { return params_; }
  size_t activation_bytes() const { return ws_.bytes(); }

  // Loss only; afterwards logits() and encoder_output() describe this batch.
  // pass.training (dropout) needs a training model.
  StepResult forward(const MlmBatchView& batch, const Pass& pass);
  // Loss and gradients: the gradient of grad_scale · loss_sum ACCUMULATES into params().grads().
  // For a mean over an update, grad_scale = 1 / (masked tokens in all its micro-batches).
  // `final_from` hears, during the backward pass, which gradients are final (Encoder::backward).
  // The last block computes its output only at the masked tokens, the only rows the loss reads
  // (when its attention projects queries apart: full attention, compress-first Linformer; see
  // QueryRows), so encoder_output() then holds those rows, not (B, T, C). Its dropout masks are
  // those of computing every row: forward() computes the same loss.
  StepResult forward_backward(const MlmBatchView& batch, const Pass& pass, float grad_scale,
                              const GradientsFinalFrom& final_from = {});
  // Every row of the last block in forward_backward too (tests and benchmarks compare the two).
  void compute_every_row(bool on) { every_row_ = on; }
  // Rows per sequence the last block computed in the last forward_backward (T when all).
  int64_t last_block_rows() const { return last_block_rows_; }
  // The offsets forward_backward tells `final_from`, in its order.
  std::vector<size_t> gradients_final_offsets() const { return encoder_.gradients_final_offsets(); }

  // Per-stage timing (off by default: it adds a clock read per stage).
  void enable_stage_timing(bool on) { timer_.enable(on); }
  StageTimes& stage_times() { return timer_.times(); }

  TensorView<const float> logits() const;          // (M, V), after forward()
  TensorView<const float> encoder_output() const;  // (B, T, C), after forward()

 private:
  struct PlanOnly {};
  MlmModel(const ModelSpec& spec, int64_t max_batch, int64_t max_masked, WorkspaceUse use, PlanOnly);
  static std::vector<std::string> stage_names(const ModelSpec& spec);
  size_t head_stage() const { return timer_.times().names.size() - 1; }
  void check_batch(const MlmBatchView& batch) const;
  StepResult run_forward(const MlmBatchView& batch, const Pass& pass, float grad_scale,
                         const QueryRows* last_rows = nullptr);
  // The last block's rows for this batch (its masked tokens, per sequence), or null when it
  // computes every row; fills query_source_ and head_positions_.
  const QueryRows* select_last_rows(const MlmBatchView& batch);

  ModelSpec spec_;
  int64_t max_batch_, max_masked_;
  Parameters params_;
  Workspace ws_;
  StageTimer timer_;
  Encoder encoder_;
  std::unique_ptr<MlmHead> head_;
  int64_t last_masked_ = 0;
  bool every_row_ = false;
  int64_t last_block_rows_ = 0;
  QueryRows last_rows_;
  std::vector<int32_t> query_source_;    // (B·Tq) the last block's rows: flat b·T + t
  std::vector<int32_t> head_positions_;  // (M) each masked token's row among them
  std::vector<int32_t> per_sequence_;    // (B) scratch: masked tokens so far
};

}  // namespace linformer

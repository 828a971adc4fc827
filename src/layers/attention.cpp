#include "linformer/layers/attention.h"

#include "linformer/layers/full_attention.h"
#include "linformer/layers/linformer_attention.h"

namespace linformer {

using config::ProjectionKind;
using config::Sharing;

bool compresses_input_first(const ModelSpec& spec) {
  const bool per_head_parameters = spec.sharing == Sharing::none && (spec.projection == ProjectionKind::linear ||
                                                                     spec.projection == ProjectionKind::conv);
  // The band reads every row's keys and values, which compressing x first never makes.
  return spec.is_linformer() && spec.projection != ProjectionKind::max && !per_head_parameters &&
         spec.local_window == 0;
}

bool shares_compression(const ModelSpec& spec) {
  return spec.sharing == Sharing::kv || spec.sharing == Sharing::layerwise || spec.projection == ProjectionKind::mean;
}

Attention::ProjectionNames Attention::projection_names(const ModelSpec& spec, int layer) {
  const bool learned = spec.projection == ProjectionKind::linear || spec.projection == ProjectionKind::conv;
  if (!spec.is_linformer() || !learned) return {};
  if (spec.sharing == Sharing::layerwise) return {"shared_proj", "shared_proj"};
  const std::string p = "layers." + std::to_string(layer) + ".attn.";
  return {p + "proj_e", spec.sharing == Sharing::kv ? p + "proj_e" : p + "proj_f"};
}

namespace {
// One learned compression of layer `layer`: E (K, n) or a conv filter (s), per head for sharing none.
void declare_projection(ParameterTable& table, const ModelSpec& spec, const std::string& name, int layer) {
  const bool per_head = spec.sharing == Sharing::none;
  const int64_t H = spec.heads;
  if (spec.projection == ProjectionKind::linear) {
    const int64_t K = spec.k_per_layer[layer], n = spec.seq_len;
    table.add(name, per_head ? Shape{H, K, n} : Shape{K, n}, Init::projection, true, !spec.freeze_projection);
  } else {
    const int64_t w = spec.window(layer);
    table.add(name, per_head ? Shape{H, w} : Shape{w}, Init::conv_window, true, !spec.freeze_projection);
  }
}
}  // namespace

void Attention::declare(ParameterTable& table, const ModelSpec& spec, int layer) {
  const std::string p = "layers." + std::to_string(layer) + ".attn.";
  Linear::declare(table, p + "in_proj", 3 * spec.d_model, spec.d_model);
  Linear::declare(table, p + "out_proj", spec.d_model, spec.d_model);
  const ProjectionNames names = projection_names(spec, layer);
  if (names.e.empty() || spec.sharing == Sharing::layerwise) return;
  declare_projection(table, spec, names.e, layer);
  if (names.f != names.e) declare_projection(table, spec, names.f, layer);
}

void Attention::declare_shared(ParameterTable& table, const ModelSpec& spec) {
  const ProjectionNames names = projection_names(spec, 0);
  if (!names.e.empty() && spec.sharing == Sharing::layerwise) declare_projection(table, spec, names.e, 0);
}

double Attention::forward_flops(const ModelSpec& s, int layer, int64_t B, int64_t T, int64_t Tq) {
  const double C = s.d_model, rows = static_cast<double>(B * Tq);  // query rows
  double flops = Linear::forward_flops(rows, C, C);                // out_proj
  if (!s.is_linformer())                                           // in_proj; Q Kᵀ, P V
    return flops + Linear::forward_flops(rows, 3 * C, C) + 2 * (2 * rows * T * C);
  const double K = s.k_per_layer[layer];
  const bool linear = s.projection == ProjectionKind::linear;
  if (compresses_input_first(s)) {
    flops += Linear::forward_flops(rows, C, C) + Linear::forward_flops(B * K, 2 * C, C);  // Q; K̃, Ṽ from x̃
    if (linear) flops += (shares_compression(s) ? 1 : 2) * (2 * B * K * T * C);           // E x (and F x)
  } else {
    flops += Linear::forward_flops(static_cast<double>(B * T), 3 * C, C);  // in_proj
    if (linear) flops += 2 * (2 * B * K * T * C);                          // E K, F V (per head: the same total)
  }
  const double band = s.local_window > 0 ? 2.0 * s.local_window + 1 : 0.0;  // keys a query reads in its band
  return flops + 2 * (2 * rows * (K + band) * C);                           // Q K̃ᵀ, P Ṽ and the band's
}

Attention::Attention(const ModelSpec& spec, const Workspace& ws, int layer)
    : spec_(spec), ws_(ws), layer_(layer), C_(spec.d_model), H_(spec.heads), D_(spec.head_dim()) {}

void Attention::forward(const BatchGeometry& g, TensorView<const float> x, TensorView<float> y,
                        const uint8_t* key_valid, const Pass& pass, bool x_rounded, const QueryRows* rows) {
  LF_CHECK(!x_rounded || input_bf16(g).data() != nullptr,
           "attention layer {}: given a rounded input without a bf16 input cache", layer_);
  LF_CHECK(!rows || selects_queries(), "attention layer {}: query rows on a layer that computes every row", layer_);
  run_forward(g, x, y, key_valid, pass, x_rounded, rows);
}

void Attention::backward(const BatchGeometry& g, TensorView<const float> x, TensorView<const float> dy,
                         TensorView<float> dx, const Pass& pass, const QueryRows* rows) {
  LF_CHECK(!rows || selects_queries(), "attention layer {}: query rows on a layer that computes every row", layer_);
  run_backward(g, x, dy, dx, pass, rows);
}

std::unique_ptr<Attention> make_attention(const ModelSpec& spec, const Parameters& params, Workspace& ws, int layer,
                                          int64_t max_batch) {
  if (!spec.is_linformer()) return std::make_unique<FullAttention>(spec, params, ws, layer, max_batch);
  if (compresses_input_first(spec)) return std::make_unique<LinformerCompressFirst>(spec, params, ws, layer, max_batch);
  return std::make_unique<LinformerProjectFirst>(spec, params, ws, layer, max_batch);
}

}  // namespace linformer

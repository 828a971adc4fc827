// make_attention builds the variant family its spec asks for (layers/attention.h): full attention;
// Linformer compressing x first where the compression is linear and the same for every head (linear
// E shared by the heads, mean pooling, a shared conv filter); projecting first otherwise (max
// pooling, per-head E or conv filters). Only a training model's last layer takes query rows. What
// each family computes is checked by the model tests (finite differences, PyTorch parity, the last
// block's rows) over every configuration.

#include "linformer/layers/full_attention.h"
#include "linformer/layers/linformer_attention.h"
#include "linformer/model/mlm_model.h"
#include "model_test_util.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace linformer {
namespace {

std::string family(const Attention& a) {
  if (dynamic_cast<const FullAttention*>(&a)) return "full";
  if (dynamic_cast<const LinformerCompressFirst*>(&a)) return "compress first";
  if (dynamic_cast<const LinformerProjectFirst*>(&a)) return "project first";
  return "unknown";
}

TEST(AttentionVariants, MakeAttentionBuildsTheFamilyTheSpecAsksFor) {
  struct Case {
    const char* changes;
    const char* family;
  };
  const std::vector<Case> cases = {
      {R"({"attention": "full", "k_per_layer": []})", "full"},
      {R"({"projection": "linear", "sharing": "headwise"})", "compress first"},
      {R"({"projection": "linear", "sharing": "kv"})", "compress first"},
      {R"({"projection": "linear", "sharing": "layerwise"})", "compress first"},
      {R"({"projection": "linear", "sharing": "none"})", "project first"},
      {R"({"projection": "mean", "sharing": "none"})", "compress first"},
      {R"({"projection": "conv", "sharing": "headwise"})", "compress first"},
      {R"({"projection": "conv", "sharing": "none"})", "project first"},
      {R"({"projection": "max", "sharing": "headwise"})", "project first"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.changes);
    const ModelSpec spec = testing::tiny_spec(nlohmann::json::parse(c.changes));
    const Parameters params(spec, MlmModel::parameter_table(spec));
    for (const WorkspaceUse use : {WorkspaceUse::training, WorkspaceUse::inference}) {
      Workspace ws(use);
      for (int layer = 0; layer < spec.layers; ++layer) {
        const std::unique_ptr<Attention> a = make_attention(spec, params, ws, layer, 2);
        EXPECT_EQ(family(*a), c.family);
        EXPECT_EQ(a->selects_queries(), use == WorkspaceUse::training && layer == spec.layers - 1) << "layer " << layer;
      }
    }
  }
}

}  // namespace
}  // namespace linformer

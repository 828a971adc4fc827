// Fuzz target: a checkpoint's state.json. At start-up the target writes a complete checkpoint
// of a tiny model (weights and moments filled with a fixed pattern, so the checksums in the
// seed state.json stay right); each input replaces its state.json, then verify_checkpoint and
// read_checkpoint (which reads TrainingState) run on it.
//
// Input: state.json. LINFORMER_FUZZ_EXPORT=DIR writes the checkpoint's state.json and its two
// safetensors files to DIR (how seeds/state.json and the safetensors target's seeds were made).

#include "fuzz_support.h"
#include "linformer/core/fs.h"
#include "linformer/model/mlm_model.h"
#include "linformer/train/checkpoint.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

using namespace linformer;

namespace {

ModelSpec tiny_spec() {
  return nlohmann::json{{"layers", 1},          {"d_model", 8},         {"heads", 2},       {"ffn_dim", 16},
                        {"seq_len", 8},         {"vocab_size", 16},     {"attention", "linformer"},
                        {"k_per_layer", {4}},   {"sharing", "headwise"}, {"projection", "linear"}}
      .get<ModelSpec>();
}

struct Checkpoint {
  ModelSpec spec = tiny_spec();
  Parameters params{spec, MlmModel::parameter_table(spec)};
  AdamW adam{params, config::Recipe().optim};
  std::string dir;

  Checkpoint() {
    // A fixed pattern instead of the random init: the bytes, hence the checksums, are the same
    // in every build.
    float* values = params.values().data();
    for (size_t i = 0; i < params.values().numel(); ++i) values[i] = static_cast<float>(i % 17) / 16.0f - 0.5f;
    TrainingState state;
    state.update = 2;
    dir = write_checkpoint(fuzz::scratch().file("checkpoints"), params, adam, state, "seed = 1\n", "tokenizer bytes");
    if (const char* to = std::getenv("LINFORMER_FUZZ_EXPORT"))
      for (const char* name : {"state.json", "model.safetensors", "optimizer.safetensors"})
        fuzz::write_bytes((std::filesystem::path(to) / name).string(), read_file(dir + "/" + name));
  }
};

// KNOWN FINDINGS in src/train/checkpoint.cpp (tests/fuzz/README.md, reproducers in known/);
// remove this filter with their fix:
//   K1 read_meta: meta.value("format", "") and meta.value("format_version", 0) throw nlohmann's
//      type_error, not linformer::Error, when the field has another type (or, for the version, is
//      a float out of int's range: undefined behaviour);
//   K2 from_json(TrainingState): get<int64_t>() and get<int>() of a float outside the integer's
//      range is undefined behaviour (UBSan: float-cast-overflow).
bool reaches_known_finding(std::string_view input) {
  const auto j = nlohmann::json::parse(input, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return false;
  if (j.contains("format") && !j.at("format").is_string()) return true;
  if (j.contains("format_version") &&
      !(j.at("format_version").is_number_integer() || j.at("format_version").is_boolean()))
    return true;
  const auto huge_float = [](const nlohmann::json& v) { return v.is_number_float() && !(std::abs(v.get<double>()) < 2147483648.0); };
  std::function<bool(const nlohmann::json&)> any_huge = [&](const nlohmann::json& v) {
    if (v.is_structured()) {
      for (const auto& [key, element] : v.items())
        if (key != "elapsed_seconds" && key != "best_valid_loss" && key != "loss_sum" && any_huge(element)) return true;
      return false;
    }
    return huge_float(v);
  };
  return j.contains("state") && any_huge(j.at("state"));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Checkpoint checkpoint;
  if (fuzz::skip_known_findings() && reaches_known_finding(fuzz::as_text(data, size))) return 0;
  fuzz::write_bytes(checkpoint.dir + "/state.json", fuzz::as_text(data, size));
  fuzz::accepts([&] { verify_checkpoint(checkpoint.dir); });
  fuzz::accepts([&] { read_checkpoint(checkpoint.dir, checkpoint.params, &checkpoint.adam); });
  return 0;
}

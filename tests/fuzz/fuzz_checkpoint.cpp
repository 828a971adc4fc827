// Fuzz target: a checkpoint's state.json. At start-up the target writes a complete checkpoint
// of a tiny model (weights and moments filled with a fixed pattern, so the checksums in the
// seed state.json stay right); each input replaces its state.json, then verify_checkpoint and
// read_checkpoint (which reads TrainingState) run on it three times: with a DONE that records
// the input's crc32 (a forged but consistent seal: the parser sees the input), with an older
// checkpoint's DONE (no crc32: read unverified), and with a DONE recording another crc32, which
// must be refused. A fourth pass uses the input as DONE beside the untouched state.json.
//
// Input: state.json. LINFORMER_FUZZ_EXPORT=DIR writes the checkpoint's state.json and its two
// safetensors files to DIR (how seeds/state.json and the safetensors target's seeds were made).

#include "fuzz_support.h"
#include "linformer/core/checksum.h"
#include "linformer/core/fs.h"
#include "linformer/model/mlm_model.h"
#include "linformer/train/checkpoint.h"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

using namespace linformer;

namespace {

ModelSpec tiny_spec() {
  return nlohmann::json{{"layers", 1},
                        {"d_model", 8},
                        {"heads", 2},
                        {"ffn_dim", 16},
                        {"seq_len", 8},
                        {"vocab_size", 16},
                        {"attention", "linformer"},
                        {"k_per_layer", {4}},
                        {"sharing", "headwise"},
                        {"projection", "linear"}}
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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Checkpoint checkpoint;
  static const std::string genuine_state = read_file(checkpoint.dir + "/state.json");
  const std::string_view input = fuzz::as_text(data, size);
  const std::string crc = crc32_hex(input);
  const std::string other_crc = crc == "00000000" ? "00000001" : "00000000";
  const std::string done = checkpoint.dir + "/DONE";
  fuzz::write_bytes(checkpoint.dir + "/state.json", input);
  for (const std::string& marker : {"complete\nstate.json crc32 " + crc + "\n", std::string("complete\n")}) {
    fuzz::write_bytes(done, marker);
    fuzz::accepts([&] { verify_checkpoint(checkpoint.dir); });
    fuzz::accepts([&] { read_checkpoint(checkpoint.dir, checkpoint.params, &checkpoint.adam); });
  }
  fuzz::write_bytes(done, "complete\nstate.json crc32 " + other_crc + "\n");
  FUZZ_ASSERT(!fuzz::accepts([&] { verify_checkpoint(checkpoint.dir); }), "a state.json with another crc32 verified");
  fuzz::write_bytes(checkpoint.dir + "/state.json", genuine_state);
  fuzz::write_bytes(done, input);
  fuzz::accepts([&] { read_checkpoint(checkpoint.dir, checkpoint.params, &checkpoint.adam); });
  return 0;
}

// Fuzz target: safetensors files (model weights, optimizer moments). safetensors::File::read,
// every tensor's bytes as numbers, the weights-file metadata (read_weights_spec) and, for a
// model small enough, load_weights into parameters of the model the file describes.
//
// Input: the file. Invariants of a file that reads (safetensors.h): every tensor's byte range
// lies in the data section and holds exactly its shape's values.

#include "fuzz_support.h"
#include "linformer/model/mlm_model.h"
#include "linformer/nn/safetensors.h"
#include "linformer/nn/weights_file.h"

#include <string>

using namespace linformer;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::scratch().file("weights.safetensors");
  fuzz::write_bytes(path, fuzz::as_text(data, size));

  fuzz::accepts([&] {
    const safetensors::File file = safetensors::File::read(path);
    for (const std::string& name : file.names()) {
      const safetensors::TensorInfo& info = file.info(name);
      FUZZ_ASSERT(info.begin <= info.end && info.end <= size, "tensor '{}' is bytes [{}, {}) of a {}-byte file", name,
                  info.begin, info.end, size);
      const std::vector<double> values = file.as_doubles(name);
      FUZZ_ASSERT(values.size() * safetensors::dtype_size(info.dtype) == info.end - info.begin,
                  "tensor '{}': {} values in {} bytes", name, values.size(), info.end - info.begin);
    }
  });

  ModelSpec spec;
  if (!fuzz::accepts([&] { spec = read_weights_spec(path); })) return 0;
  // Parameters of the described model, only when small (a valid spec may describe any size).
  const ParameterTable table = MlmModel::parameter_table(spec);
  double floats = 0;
  for (const ParamSpec& p : table.entries()) {
    double n = 1;
    for (int d = 0; d < p.shape.rank(); ++d) n *= static_cast<double>(p.shape[d]);
    floats += n;
  }
  if (floats > 4e6) return 0;
  Parameters params(spec, table);
  fuzz::accepts([&] { load_weights(path, params); });
  return 0;
}

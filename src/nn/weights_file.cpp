#include "linformer/nn/weights_file.h"

#include "linformer/nn/safetensors.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <set>

namespace linformer {

void save_weights(const std::string& path, const Parameters& params) {
  std::vector<safetensors::TensorToWrite> tensors;
  for (const auto& p : params.table()) {
    std::vector<int64_t> shape;
    for (int d = 0; d < p.shape.rank(); ++d) shape.push_back(p.shape[d]);
    tensors.push_back({p.name, safetensors::DType::F32, shape, params.value(p.name).data()});
  }
  const nlohmann::json model = params.spec();
  safetensors::write(path, tensors,
                     {{"format", kWeightsFormat}, {"format_version", kWeightsFormatVersion}, {"model", model.dump()}});
}

namespace {
ModelSpec spec_of(const safetensors::File& file) {
  const auto& meta = file.metadata();
  auto format = meta.find("format");
  if (format == meta.end() || format->second != kWeightsFormat)
    LF_FAIL("{}: not a linformer weights file (__metadata__.format is not '{}')", file.path(), kWeightsFormat);
  auto version = meta.find("format_version");
  if (version == meta.end() || version->second != kWeightsFormatVersion)
    LF_FAIL("{}: weights format version '{}' is not supported (expected {})", file.path(),
            version == meta.end() ? "missing" : version->second, kWeightsFormatVersion);
  auto model = meta.find("model");
  if (model == meta.end()) LF_FAIL("{}: __metadata__ has no 'model'", file.path());
  try {
    return with_context(file.path() + ": __metadata__.model", [&] {
      return nlohmann::json::parse(model->second).get<ModelSpec>();
    });
  } catch (const nlohmann::json::exception& e) {
    LF_FAIL("{}: __metadata__.model is not valid JSON: {}", file.path(), e.what());
  }
}
}  // namespace

ModelSpec read_weights_spec(const std::string& path) { return spec_of(safetensors::File::read(path)); }

void load_weights(const std::string& path, Parameters& params) {
  const auto file = safetensors::File::read(path);
  spec_of(file);  // the format check
  std::set<std::string> expected;
  for (const auto& p : params.table()) {
    expected.insert(p.name);
    if (!file.contains(p.name)) LF_FAIL("{}: missing tensor '{}'", path, p.name);
    const auto& info = file.info(p.name);
    if (info.dtype != safetensors::DType::F32)
      LF_FAIL("{}: tensor '{}' is {}, expected F32", path, p.name, safetensors::dtype_name(info.dtype));
    std::vector<int64_t> shape;
    for (int d = 0; d < p.shape.rank(); ++d) shape.push_back(p.shape[d]);
    if (info.shape != shape) {
      std::string got = "(";
      for (size_t i = 0; i < info.shape.size(); ++i) got += (i ? ", " : "") + std::to_string(info.shape[i]);
      LF_FAIL("{}: tensor '{}' has shape {}), the model needs {}", path, p.name, got, p.shape.str());
    }
  }
  for (const auto& name : file.names())
    if (!expected.count(name)) LF_FAIL("{}: unexpected tensor '{}' (not part of this model)", path, name);
  for (const auto& p : params.table())
    std::memcpy(params.value(p.name).data(), file.data(p.name), static_cast<size_t>(p.shape.numel()) * sizeof(float));
}

}  // namespace linformer

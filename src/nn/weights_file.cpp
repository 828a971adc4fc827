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
    return with_context(file.path() + ": __metadata__.model",
                        [&] { return nlohmann::json::parse(model->second).get<ModelSpec>(); });
  } catch (const nlohmann::json::exception& e) {
    LF_FAIL("{}: __metadata__.model is not valid JSON: {}", file.path(), e.what());
  }
}
}  // namespace

ModelSpec read_weights_spec(const std::string& path) { return spec_of(safetensors::File::read(path)); }

namespace {
// The tensors of params that `loaded` selects, checked against the file (present, F32, same
// shape) and copied; returns the file's tensors params does not have (refused, before anything
// is copied, unless allow_others).
template <class Selected>
std::vector<std::string> load_selected(const std::string& path, Parameters& params, bool allow_others,
                                       Selected loaded) {
  const auto file = safetensors::File::read(path);
  spec_of(file);  // the format check
  std::set<std::string> ours;
  for (const auto& p : params.table()) {
    ours.insert(p.name);
    if (!loaded(p.name)) continue;
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
  std::vector<std::string> others;
  for (const auto& name : file.names())
    if (!ours.count(name)) others.push_back(name);
  if (!allow_others && !others.empty())
    LF_FAIL("{}: unexpected tensor '{}' (not part of this model)", path, others.front());
  for (const auto& p : params.table())
    if (loaded(p.name))
      std::memcpy(params.value(p.name).data(), file.data(p.name), static_cast<size_t>(p.shape.numel()) * sizeof(float));
  params.values_changed();
  return others;
}
}  // namespace

void load_weights(const std::string& path, Parameters& params) {
  load_selected(path, params, false, [](const std::string&) { return true; });
}

std::vector<std::string> load_shared_weights(const std::string& path, Parameters& params,
                                             const std::string& own_prefix) {
  return load_selected(path, params, true, [&](const std::string& name) { return name.rfind(own_prefix, 0) != 0; });
}

}  // namespace linformer

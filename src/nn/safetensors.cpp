#include "linformer/nn/safetensors.h"

#include "linformer/core/check.h"
#include "linformer/core/fs.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <limits>

namespace linformer::safetensors {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return 4;
    case DType::F64:
      return 8;
    case DType::I32:
      return 4;
    case DType::I64:
      return 8;
  }
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return "F32";
    case DType::F64:
      return "F64";
    case DType::I32:
      return "I32";
    case DType::I64:
      return "I64";
  }
  return "?";
}

int64_t TensorInfo::numel() const {
  // An empty extent first: the other extents of an empty tensor may multiply past int64.
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return 0;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {
DType parse_dtype(const std::string& text, const std::string& where) {
  for (DType d : {DType::F32, DType::F64, DType::I32, DType::I64})
    if (text == dtype_name(d)) return d;
  LF_FAIL("{}: dtype '{}' is not supported (F32, F64, I32 or I64)", where, text);
}
// A JSON array of non-negative integers: nlohmann's get<int64_t>() would also take a float (2.5,
// 1e30) and convert it with a cast, which truncates or, out of range, is undefined.
std::vector<uint64_t> counts(const nlohmann::json& array, const std::string& where, const char* what) {
  if (!array.is_array()) LF_FAIL("{}: {} is not an array", where, what);
  std::vector<uint64_t> out;
  for (const auto& v : array) {
    if (!v.is_number_unsigned()) LF_FAIL("{}: {} holds {}, not a non-negative integer", where, what, v.dump());
    out.push_back(v.get<uint64_t>());
  }
  return out;
}
}  // namespace

File File::read(const std::string& path) {
  File f;
  f.path_ = path;
  f.bytes_ = read_file(path);
  const std::string& b = f.bytes_;
  if (b.size() < 8) LF_FAIL("{}: not a safetensors file (only {} bytes)", path, b.size());
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | static_cast<unsigned char>(b[i]);
  if (header_size > b.size() - 8)
    LF_FAIL("{}: not a safetensors file (header of {} bytes in a file of {})", path, header_size, b.size());
  f.data_start_ = 8 + header_size;
  const size_t data_size = b.size() - f.data_start_;
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(b.begin() + 8, b.begin() + static_cast<std::ptrdiff_t>(f.data_start_));
  } catch (const nlohmann::json::exception& e) {
    LF_FAIL("{}: the safetensors header is not valid JSON: {}", path, e.what());
  }
  if (!header.is_object()) LF_FAIL("{}: the safetensors header is not a JSON object", path);
  for (const auto& [name, value] : header.items()) {
    const std::string where = fmt::format("{}: tensor '{}'", path, name);
    if (name == "__metadata__") {
      if (!value.is_object()) LF_FAIL("{}: __metadata__ is not an object", path);
      for (const auto& [k, v] : value.items()) {
        if (!v.is_string()) LF_FAIL("{}: __metadata__ value '{}' is not a string", path, k);
        f.metadata_[k] = v.get<std::string>();
      }
      continue;
    }
    try {
      TensorInfo info;
      info.dtype = parse_dtype(value.at("dtype").get<std::string>(), where);
      for (uint64_t d : counts(value.at("shape"), where, "shape")) {
        if (d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) LF_FAIL("{}: extent {} in shape", where, d);
        info.shape.push_back(static_cast<int64_t>(d));
      }
      const auto offsets = counts(value.at("data_offsets"), where, "data_offsets");
      if (offsets.size() != 2) LF_FAIL("{}: data_offsets must have two entries", where);
      info.begin = offsets[0];
      info.end = offsets[1];
      // The shape's values must fit in the data before they are counted: a product of extents
      // could overflow int64, or wrap to the right byte count once multiplied by the dtype's size.
      if (std::find(info.shape.begin(), info.shape.end(), 0) == info.shape.end()) {
        const uint64_t fit = data_size / dtype_size(info.dtype);
        uint64_t values = 1;
        for (int64_t d : info.shape) {
          if (static_cast<uint64_t>(d) > fit / values)
            LF_FAIL("{}: shape holds more values than the {} bytes of data", where, data_size);
          values *= static_cast<uint64_t>(d);
        }
      }
      if (info.begin > info.end || info.end > data_size)
        LF_FAIL("{}: data_offsets [{}, {}] outside the {} bytes of data", where, info.begin, info.end, data_size);
      if (info.end - info.begin != static_cast<size_t>(info.numel()) * dtype_size(info.dtype))
        LF_FAIL("{}: {} bytes for {} values of {}", where, info.end - info.begin, info.numel(), dtype_name(info.dtype));
      f.tensors_[name] = info;
    } catch (const nlohmann::json::exception& e) {
      LF_FAIL("{}: malformed entry: {}", where, e.what());
    }
  }
  return f;
}

std::vector<std::string> File::names() const {
  std::vector<std::string> out;
  for (const auto& [name, info] : tensors_) out.push_back(name);
  return out;
}

const TensorInfo& File::info(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) LF_FAIL("{}: no tensor named '{}'", path_, name);
  return it->second;
}

const void* File::data(const std::string& name) const { return bytes_.data() + data_start_ + info(name).begin; }

std::vector<double> File::as_doubles(const std::string& name) const {
  const TensorInfo& t = info(name);
  std::vector<double> out(static_cast<size_t>(t.numel()));
  const char* p = static_cast<const char*>(data(name));
  for (size_t i = 0; i < out.size(); ++i) {
    switch (t.dtype) {
      case DType::F32: {
        float v;
        std::memcpy(&v, p + 4 * i, 4);
        out[i] = v;
        break;
      }
      case DType::F64: {
        double v;
        std::memcpy(&v, p + 8 * i, 8);
        out[i] = v;
        break;
      }
      case DType::I32: {
        int32_t v;
        std::memcpy(&v, p + 4 * i, 4);
        out[i] = v;
        break;
      }
      case DType::I64: {
        int64_t v;
        std::memcpy(&v, p + 8 * i, 8);
        out[i] = static_cast<double>(v);
        break;
      }
    }
  }
  return out;
}

void write(const std::string& path, const std::vector<TensorToWrite>& tensors,
           const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  size_t offset = 0;
  for (const auto& t : tensors) {
    int64_t numel = 1;
    for (int64_t d : t.shape) numel *= d;
    const size_t bytes = static_cast<size_t>(numel) * dtype_size(t.dtype);
    header[t.name] = {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keep the data 8-byte aligned
  std::string file(8, '\0');
  const uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) file[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
  file += text;
  file.reserve(file.size() + offset);
  for (const auto& t : tensors) {
    int64_t numel = 1;
    for (int64_t d : t.shape) numel *= d;
    file.append(static_cast<const char*>(t.data), static_cast<size_t>(numel) * dtype_size(t.dtype));
  }
  write_file_atomic(path, file);
}

}  // namespace linformer::safetensors

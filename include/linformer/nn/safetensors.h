#pragma once
// The safetensors format: 8-byte little-endian header length N, N bytes of JSON
// {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {str: str}},
// then the raw little-endian data (offsets relative to its start). Files open
// with Python's safetensors or a few lines of PyTorch.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace linformer::safetensors {

enum class DType { F32, F64, I32, I64 };
size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);

struct TensorInfo {
  DType dtype;
  std::vector<int64_t> shape;
  size_t begin = 0, end = 0;  // byte offsets into the data section
  int64_t numel() const;
};

// A whole file read into memory, its header validated.
class File {
 public:
  static File read(const std::string& path);

  const std::string& path() const { return path_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  std::vector<std::string> names() const;
  bool contains(const std::string& name) const { return tensors_.count(name) > 0; }
  const TensorInfo& info(const std::string& name) const;
  const void* data(const std::string& name) const;  // the raw bytes of one tensor
  // Any numeric tensor converted to double (for comparisons in tests and tools).
  std::vector<double> as_doubles(const std::string& name) const;

 private:
  std::string path_;
  std::string bytes_;
  size_t data_start_ = 0;
  std::map<std::string, TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

struct TensorToWrite {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  const void* data;
};

// Writes atomically (temporary file, fsync, rename).
void write(const std::string& path, const std::vector<TensorToWrite>& tensors,
           const std::map<std::string, std::string>& metadata);

}  // namespace linformer::safetensors

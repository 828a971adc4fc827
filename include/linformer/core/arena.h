#pragma once
// One allocation per role (parameters, gradients, Adam moments, activations).
//
// An ArenaLayout is the table of named tensors {name, shape}; it gives each an
// offset aligned to kArenaAlignment bytes, plus an optional skew (a whole number of
// elements, less than the alignment) that every tensor shares. An Arena allocates the layout's total
// once and hands out views into it, so zeroing a role is one memset and an
// optimizer is one flat loop over data()[0, numel()).

#include "linformer/core/tensor.h"

#include <cstddef>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace linformer {

inline constexpr size_t kArenaAlignment = 64;  // one cache line, one AVX-512 register

class ArenaLayout {
 public:
  struct Entry {
    std::string name;
    Shape shape;
    size_t offset;  // in elements from the start of the arena
  };

  explicit ArenaLayout(size_t element_size, size_t skew_bytes = 0);

  // Appends a tensor; returns its index. Names must be unique.
  int add(const std::string& name, Shape shape);

  size_t element_size() const { return element_size_; }
  size_t skew_bytes() const { return skew_elements_ * element_size_; }
  size_t numel() const { return numel_; }  // including alignment padding
  size_t bytes() const { return numel_ * element_size_; }
  const std::vector<Entry>& entries() const { return entries_; }
  const Entry& entry(int index) const { return entries_.at(index); }
  int index_of(const std::string& name) const;  // throws if absent
  bool contains(const std::string& name) const { return by_name_.count(name) > 0; }

 private:
  size_t element_size_;
  size_t skew_elements_;
  size_t numel_ = 0;
  std::vector<Entry> entries_;
  std::unordered_map<std::string, int> by_name_;
};

template <class T>
class Arena {
 public:
  // Allocates layout.bytes() (zero-filled) once.
  explicit Arena(ArenaLayout layout) : layout_(std::move(layout)), storage_(allocate(layout_.bytes())) {
    LF_CHECK(layout_.element_size() == sizeof(T), "layout element size {} used for an arena of {}-byte elements",
             layout_.element_size(), sizeof(T));
  }

  const ArenaLayout& layout() const { return layout_; }
  T* data() const { return static_cast<T*>(storage_.get()); }
  size_t numel() const { return layout_.numel(); }
  void zero() const;

  TensorView<T> view(int index) const {
    const auto& e = layout_.entry(index);
    return TensorView<T>(data() + e.offset, e.shape);
  }
  TensorView<T> view(const std::string& name) const { return view(layout_.index_of(name)); }

 private:
  struct Free {
    void operator()(void* p) const;
  };
  static std::unique_ptr<void, Free> allocate(size_t bytes);

  ArenaLayout layout_;
  std::unique_ptr<void, Free> storage_;
};

}  // namespace linformer

#pragma once
// The activation arena. Layers reserve their buffers by name while the model is built, each
// with its shape stated once, in terms of the sizes a batch brings (B sequences of T tokens,
// or a count N the layer chooses per call) and their largest values; one allocation follows;
// forward and backward then take views shaped for the current batch. Nothing is allocated in
// a step.
//
// Caches that backward reads are reserved per layer; scratch buffers that only
// live inside one layer's backward are shared: every layer reserving the same
// shared name gets the same buffer, sized for the largest request.
//
// An inference workspace (eval, fill-mask, bench attention) keeps no backward:
// a layer's caches are dead once the next layer starts, so every layer's cache
// of one role shares a buffer, and backward scratch is not allocated at all.

#include "linformer/core/arena.h"
#include "linformer/kernels/bf16.h"

#include <array>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace linformer {

enum class WorkspaceUse { training, inference };

// The sizes of the current call that buffer shapes refer to: the batch's B and T, and N, a
// count of rows the layer chooses (masked tokens, rows of a chunk). Unused ones stay 0.
struct Extents {
  int64_t B = 0, T = 0, N = 0;
  static Extents rows(int64_t n) { return {0, 0, n}; }
};

// One axis of a buffer's shape: a fixed size, or one of the call's extents with its largest value.
class Dim {
 public:
  Dim() : Dim(0) {}
  Dim(int64_t size) : kind_(Kind::fixed), size_(size) {}                  // NOLINT: a number is a fixed axis
  static Dim batch(int64_t largest) { return {Kind::batch, largest}; }    // B
  static Dim tokens(int64_t largest) { return {Kind::tokens, largest}; }  // T
  static Dim rows(int64_t largest) { return {Kind::rows, largest}; }      // N

  int64_t largest() const { return size_; }
  // The size for this call's extents (the fixed size, or the extent, checked against the largest).
  int64_t resolve(const Extents& e, const std::string& buffer) const;

 private:
  enum class Kind { fixed, batch, tokens, rows };
  Dim(Kind kind, int64_t size) : kind_(kind), size_(size) {}
  Kind kind_;
  int64_t size_;  // the fixed size, or the extent's largest value
};

// A reserved buffer of T (float or bf16) and its shape; default-constructed: no buffer (a
// backward buffer of an inference workspace, or a cache a variant does not need).
template <class T>
class Buffer {
 public:
  Buffer() = default;
  explicit operator bool() const { return id_ >= 0; }

 private:
  friend class Workspace;
  int id_ = -1;
  int rank_ = 0;
  std::array<Dim, kMaxRank> dims_{};
};

using Dims = std::initializer_list<Dim>;

class Workspace {
 public:
  explicit Workspace(WorkspaceUse use = WorkspaceUse::training) : use_(use) {}
  bool inference() const { return use_ == WorkspaceUse::inference; }

  // A buffer of shape `dims` for this caller alone.
  template <class T = float>
  Buffer<T> reserve(const std::string& name, Dims dims) {
    return make<T>(add(name, numel(dims), sizeof(T), false), dims);
  }
  // A buffer shared by every caller using `name` (sized for the largest of them).
  template <class T = float>
  Buffer<T> reserve_shared(const std::string& name, Dims dims) {
    return make<T>(add(name, numel(dims), sizeof(T), true), dims);
  }
  // A cache `role` (e.g. "attn.qkv") that layer `layer`'s forward fills: its own buffer
  // when training, shared by all layers in inference.
  template <class T = float>
  Buffer<T> reserve_cache(int layer, const std::string& role, Dims dims) {
    return inference() ? reserve_shared<T>(role, dims) : reserve<T>("layer" + std::to_string(layer) + "." + role, dims);
  }
  // Scratch that only backward uses: shared when training; in inference not allocated (no
  // buffer, which view() refuses).
  template <class T = float>
  Buffer<T> reserve_backward(const std::string& name, Dims dims) {
    return inference() ? Buffer<T>{} : reserve_shared<T>(name, dims);
  }

  void allocate();
  // Bytes allocate() takes (or took).
  size_t planned_bytes() const;

  // Buffer `b` as a contiguous view of its shape for these extents.
  template <class T>
  TensorView<T> view(const Buffer<T>& b, const Extents& e) const {
    const float* storage = start(b.id_);
    std::array<int64_t, kMaxRank> sizes{};
    for (int d = 0; d < b.rank_; ++d) sizes[d] = b.dims_[d].resolve(e, requests_[b.id_].name);
    return TensorView<T>(reinterpret_cast<T*>(const_cast<float*>(storage)), Shape(sizes.data(), b.rank_));
  }
  size_t bytes() const;

 private:
  static_assert(sizeof(bf16) * 2 == sizeof(float), "bf16 buffers are laid out in halves of float slots");
  struct Request {
    std::string name;
    int64_t bytes;
    size_t element_size;
    bool shared;
  };
  static int64_t numel(Dims dims);
  int add(const std::string& name, int64_t numel, size_t element_size, bool shared);
  // The first float of buffer `id` (refuses no buffer, and use before allocation).
  const float* start(int id) const;
  template <class T>
  static Buffer<T> make(int id, Dims dims) {
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, bf16>, "workspace buffers hold float or bf16");
    LF_CHECK(static_cast<int>(dims.size()) <= kMaxRank, "a workspace buffer of rank {}", dims.size());
    Buffer<T> b;
    b.id_ = id;
    for (const Dim& d : dims) b.dims_[b.rank_++] = d;
    return b;
  }

  WorkspaceUse use_;
  std::vector<Request> requests_;
  std::vector<size_t> offsets_;  // in floats
  std::unique_ptr<Arena<float>> arena_;
};

}  // namespace linformer

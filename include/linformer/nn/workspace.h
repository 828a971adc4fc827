#pragma once
// The activation arena. Layers reserve their buffers by name and largest size
// while the model is built; one allocation follows; forward and backward then
// take views of the current batch's shape. Nothing is allocated in a step.
//
// Caches that backward reads are reserved per layer; scratch buffers that only
// live inside one layer's backward are shared: every layer reserving the same
// shared name gets the same buffer, sized for the largest request.
//
// An inference workspace (eval, fill-mask, bench attention) keeps no backward:
// a layer's caches are dead once the next layer starts, so every layer's cache
// of one role shares a buffer, and backward scratch is not allocated at all.

#include "linformer/core/arena.h"

#include <memory>
#include <string>
#include <vector>

namespace linformer {

enum class WorkspaceUse { training, inference };

class Workspace {
 public:
  explicit Workspace(WorkspaceUse use = WorkspaceUse::training) : use_(use) {}
  bool inference() const { return use_ == WorkspaceUse::inference; }

  // A buffer of up to `max_numel` floats for this caller alone; returns its id.
  int reserve(const std::string& name, int64_t max_numel);
  // A buffer shared by every caller using `name`; returns its id.
  int reserve_shared(const std::string& name, int64_t max_numel);
  // A cache `role` (e.g. "attn.qkv") that layer `layer`'s forward fills: its own buffer
  // when training, shared by all layers in inference.
  int reserve_cache(int layer, const std::string& role, int64_t max_numel);
  // Scratch that only backward uses: shared when training; in inference not
  // allocated (returns kNoBuffer, which view() refuses).
  int reserve_backward(const std::string& name, int64_t max_numel);
  static constexpr int kNoBuffer = -1;

  void allocate();
  // Bytes allocate() takes (or took).
  size_t planned_bytes() const;

  // The first shape.numel() floats of buffer `id`, as a contiguous view of `shape`.
  TensorView<float> view(int id, Shape shape) const;
  size_t bytes() const;

 private:
  struct Request {
    std::string name;
    int64_t numel;
    bool shared;
  };
  WorkspaceUse use_;
  std::vector<Request> requests_;
  std::vector<size_t> offsets_;
  std::unique_ptr<Arena<float>> arena_;
};

}  // namespace linformer

#pragma once
// The activation arena. Layers reserve their buffers by name and largest size
// while the model is built; one allocation follows; forward and backward then
// take views of the current batch's shape. Nothing is allocated in a step.
//
// Caches that backward reads are reserved per layer; scratch buffers that only
// live inside one layer's backward are shared: every layer reserving the same
// shared name gets the same buffer, sized for the largest request.

#include "linformer/core/arena.h"

#include <memory>
#include <string>
#include <vector>

namespace linformer {

class Workspace {
 public:
  // A buffer of up to `max_numel` floats for this caller alone; returns its id.
  int reserve(const std::string& name, int64_t max_numel);
  // A buffer shared by every caller using `name`; returns its id.
  int reserve_shared(const std::string& name, int64_t max_numel);
  void allocate();

  // The first shape.numel() floats of buffer `id`, as a contiguous view of `shape`.
  TensorView<float> view(int id, Shape shape) const;
  size_t bytes() const;

 private:
  struct Request {
    std::string name;
    int64_t numel;
    bool shared;
  };
  std::vector<Request> requests_;
  std::vector<size_t> offsets_;
  std::unique_ptr<Arena<float>> arena_;
};

}  // namespace linformer

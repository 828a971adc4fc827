#include "linformer/nn/workspace.h"

#include "linformer/kernels/matmul.h"

#include <algorithm>

namespace linformer {

int Workspace::reserve(const std::string& name, int64_t max_numel) {
  LF_CHECK(!arena_, "workspace buffer '{}' reserved after allocation", name);
  for (const auto& r : requests_) LF_CHECK(r.name != name, "workspace buffer '{}' reserved twice", name);
  requests_.push_back({name, max_numel, false});
  return static_cast<int>(requests_.size()) - 1;
}

int Workspace::reserve_shared(const std::string& name, int64_t max_numel) {
  LF_CHECK(!arena_, "workspace buffer '{}' reserved after allocation", name);
  for (size_t i = 0; i < requests_.size(); ++i) {
    if (requests_[i].name != name) continue;
    LF_CHECK(requests_[i].shared, "workspace buffer '{}' is not shared", name);
    requests_[i].numel = std::max(requests_[i].numel, max_numel);
    return static_cast<int>(i);
  }
  requests_.push_back({name, max_numel, true});
  return static_cast<int>(requests_.size()) - 1;
}

int Workspace::reserve_cache(int layer, const std::string& role, int64_t max_numel) {
  return inference() ? reserve_shared(role, max_numel) : reserve("layer" + std::to_string(layer) + "." + role, max_numel);
}

int Workspace::reserve_backward(const std::string& name, int64_t max_numel) {
  return inference() ? kNoBuffer : reserve_shared(name, max_numel);
}

size_t Workspace::planned_bytes() const {
  if (arena_) return arena_->layout().bytes();
  ArenaLayout layout(sizeof(float), matmul_operand_skew_bytes());
  for (const auto& r : requests_) layout.add(r.name, Shape{r.numel});
  return layout.bytes();
}

void Workspace::allocate() {
  LF_CHECK(!arena_, "workspace allocated twice");
  ArenaLayout layout(sizeof(float), matmul_operand_skew_bytes());
  for (const auto& r : requests_) offsets_.push_back(layout.entry(layout.add(r.name, Shape{r.numel})).offset);
  arena_ = std::make_unique<Arena<float>>(layout);
}

size_t Workspace::bytes() const { return arena_ ? arena_->layout().bytes() : 0; }

TensorView<float> Workspace::view(int id, Shape shape) const {
  LF_CHECK(arena_, "workspace used before allocation");
  LF_CHECK(id != kNoBuffer, "a backward buffer was used in an inference workspace");
  const auto& r = requests_.at(id);
  LF_CHECK(shape.numel() <= r.numel, "buffer '{}' holds {} values, {} needs {}", r.name, r.numel, shape.str(),
           shape.numel());
  return TensorView<float>(arena_->data() + offsets_[id], shape);
}

}  // namespace linformer

#include "linformer/nn/workspace.h"

#include "linformer/kernels/matmul.h"

#include <algorithm>

namespace linformer {

int64_t Dim::resolve(const Extents& e, const std::string& buffer) const {
  if (kind_ == Kind::fixed) return size_;
  const char* name = kind_ == Kind::batch ? "B" : kind_ == Kind::tokens ? "T" : "N";
  const int64_t value = kind_ == Kind::batch ? e.B : kind_ == Kind::tokens ? e.T : e.N;
  LF_CHECK(value >= 0 && value <= size_, "workspace buffer '{}': {} = {}, reserved for at most {}", buffer, name, value,
           size_);
  return value;
}

int64_t Workspace::numel(Dims dims) {
  int64_t n = 1;
  for (const Dim& d : dims) n *= d.largest();
  return n;
}

int Workspace::add(const std::string& name, int64_t numel, size_t element_size, bool shared) {
  LF_CHECK(!arena_, "workspace buffer '{}' reserved after allocation", name);
  const int64_t bytes = numel * static_cast<int64_t>(element_size);
  for (size_t i = 0; i < requests_.size(); ++i) {
    Request& r = requests_[i];
    if (r.name != name) continue;
    LF_CHECK(shared && r.shared, "workspace buffer '{}' reserved twice", name);
    LF_CHECK(r.element_size == element_size, "shared workspace buffer '{}' reserved with two element types", name);
    r.bytes = std::max(r.bytes, bytes);
    return static_cast<int>(i);
  }
  requests_.push_back({name, bytes, element_size, shared});
  return static_cast<int>(requests_.size()) - 1;
}

namespace {
// Buffers are laid out in floats: a bf16 buffer takes half as many, rounded up.
int64_t floats_for(int64_t bytes) { return (bytes + static_cast<int64_t>(sizeof(float)) - 1) / sizeof(float); }
}  // namespace

size_t Workspace::planned_bytes() const {
  if (arena_) return arena_->layout().bytes();
  ArenaLayout layout(sizeof(float), matmul_operand_skew_bytes());
  for (const auto& r : requests_) layout.add(r.name, Shape{floats_for(r.bytes)});
  return layout.bytes();
}

void Workspace::allocate() {
  LF_CHECK(!arena_, "workspace allocated twice");
  ArenaLayout layout(sizeof(float), matmul_operand_skew_bytes());
  for (const auto& r : requests_)
    offsets_.push_back(layout.entry(layout.add(r.name, Shape{floats_for(r.bytes)})).offset);
  arena_ = std::make_unique<Arena<float>>(layout);
}

size_t Workspace::bytes() const { return arena_ ? arena_->layout().bytes() : 0; }

const float* Workspace::start(int id) const {
  LF_CHECK(id >= 0, "a backward buffer was used in an inference workspace");
  LF_CHECK(arena_, "workspace buffer '{}' used before allocation", requests_.at(id).name);
  return arena_->data() + offsets_[id];
}

}  // namespace linformer

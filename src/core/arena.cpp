#include "linformer/core/arena.h"

#include <cstdlib>
#include <cstring>

namespace linformer {

ArenaLayout::ArenaLayout(size_t element_size, size_t skew_bytes)
    : element_size_(element_size), skew_elements_(skew_bytes / element_size) {
  LF_CHECK(element_size > 0 && kArenaAlignment % element_size == 0, "arena element size {} does not divide {}",
           element_size, kArenaAlignment);
  LF_CHECK(skew_bytes < kArenaAlignment && skew_bytes % element_size == 0,
           "arena skew of {} bytes is not a whole number of {}-byte elements below {}", skew_bytes, element_size,
           kArenaAlignment);
}

int ArenaLayout::add(const std::string& name, Shape shape) {
  LF_CHECK(!name.empty(), "arena tensors need a name");
  LF_CHECK(!contains(name), "tensor '{}' is already in the arena layout", name);
  const size_t align = kArenaAlignment / element_size_;  // elements per alignment unit
  const size_t offset = (numel_ + align - 1) / align * align + skew_elements_;
  entries_.push_back({name, shape, offset});
  numel_ = offset + static_cast<size_t>(shape.numel());
  by_name_[name] = static_cast<int>(entries_.size()) - 1;
  return static_cast<int>(entries_.size()) - 1;
}

int ArenaLayout::index_of(const std::string& name) const {
  auto it = by_name_.find(name);
  LF_CHECK(it != by_name_.end(), "no tensor named '{}' in the arena layout", name);
  return it->second;
}

template <class T>
void Arena<T>::zero() const {
  std::memset(storage_.get(), 0, layout_.bytes());
}

template <class T>
void Arena<T>::Free::operator()(void* p) const {
  std::free(p);
}

template <class T>
std::unique_ptr<void, typename Arena<T>::Free> Arena<T>::allocate(size_t bytes) {
  // aligned_alloc needs a size that is a multiple of the alignment; never 0.
  const size_t rounded = (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
  void* p = std::aligned_alloc(kArenaAlignment, rounded == 0 ? kArenaAlignment : rounded);
  LF_CHECK(p != nullptr, "out of memory allocating an arena of {} bytes", rounded);
  std::memset(p, 0, rounded == 0 ? kArenaAlignment : rounded);
  return std::unique_ptr<void, Free>(p);
}

template class Arena<float>;
template class Arena<double>;
template class Arena<int32_t>;
template class Arena<uint16_t>;  // bf16 storage

}  // namespace linformer

#include "linformer/core/tensor.h"

#include <fmt/format.h>

namespace linformer {

Shape::Shape(std::initializer_list<int64_t> dims) : Shape(dims.begin(), static_cast<int>(dims.size())) {}

Shape::Shape(const int64_t* dims, int rank) {
  LF_CHECK(rank >= 0 && rank <= kMaxRank, "rank {} exceeds the maximum {}", rank, kMaxRank);
  for (int d = 0; d < rank; ++d) {
    LF_CHECK(dims[d] >= 0, "negative extent {} in a shape", dims[d]);
    dims_[rank_++] = dims[d];
  }
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int d = 0; d < rank_; ++d) n *= dims_[d];
  return n;
}

bool Shape::operator==(const Shape& other) const {
  if (rank_ != other.rank_) return false;
  for (int d = 0; d < rank_; ++d)
    if (dims_[d] != other.dims_[d]) return false;
  return true;
}

std::string Shape::str() const {
  std::string s = "(";
  for (int d = 0; d < rank_; ++d) s += fmt::format(d ? ", {}" : "{}", dims_[d]);
  return s + ")";
}

Shape Shape::contiguous_strides() const {
  Shape strides = *this;
  int64_t step = 1;
  for (int d = rank_ - 1; d >= 0; --d) {
    strides.dims_[d] = step;
    step *= dims_[d];
  }
  return strides;
}

Shape Shape::without_axis(int dim) const {
  LF_CHECK(0 <= dim && dim < rank_, "axis {} of a rank-{} shape", dim, rank_);
  Shape out;
  for (int d = 0; d < rank_; ++d)
    if (d != dim) out.dims_[out.rank_++] = dims_[d];
  return out;
}

}  // namespace linformer

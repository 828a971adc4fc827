#pragma once
// Non-owning tensor views: a pointer, a shape and strides (in elements).
//
// Axis names used across the project: B batch, T/n sequence, C/d channels,
// H heads, K projected length, V vocabulary. Views never allocate; the memory
// belongs to an Arena (core/arena.h) or to the caller.

#include "linformer/core/check.h"

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>

namespace linformer {

inline constexpr int kMaxRank = 4;

// Up to kMaxRank extents, outermost first.
class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);
  Shape(const int64_t* dims, int rank);

  int rank() const { return rank_; }
  int64_t operator[](int d) const { return dims_[d]; }
  int64_t& operator[](int d) { return dims_[d]; }
  int64_t numel() const;
  bool operator==(const Shape& other) const;
  bool operator!=(const Shape& other) const { return !(*this == other); }
  std::string str() const;  // "(8, 512, 256)"

  // Row-major (C order) strides for this shape.
  Shape contiguous_strides() const;
  // The same extents with axis `dim` removed.
  Shape without_axis(int dim) const;

 private:
  std::array<int64_t, kMaxRank> dims_{};
  int rank_ = 0;
};

template <class T>
class TensorView {
 public:
  TensorView() = default;
  // A contiguous row-major view.
  TensorView(T* data, Shape shape) : data_(data), shape_(shape), strides_(shape.contiguous_strides()) {}
  // Any strided view (strides in elements, may be 0 for broadcasting).
  TensorView(T* data, Shape shape, Shape strides) : data_(data), shape_(shape), strides_(strides) {
    LF_CHECK(shape.rank() == strides.rank(), "shape {} and strides {} differ in rank", shape.str(), strides.str());
  }
  // A view of T is also a view of const T.
  template <class U, class = std::enable_if_t<std::is_same_v<const U, T> && !std::is_same_v<U, T>>>
  TensorView(const TensorView<U>& other)  // NOLINT(google-explicit-constructor)
      : data_(other.data()), shape_(other.shape()), strides_(other.strides()) {}

  T* data() const { return data_; }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  int rank() const { return shape_.rank(); }
  int64_t size(int d) const { return shape_[d]; }
  int64_t stride(int d) const { return strides_[d]; }
  int64_t numel() const { return shape_.numel(); }
  bool empty() const { return numel() == 0; }
  bool is_contiguous() const { return strides_ == shape_.contiguous_strides(); }

  // Unchecked element access (hot loops).
  T& operator()(int64_t i) const { return data_[i * strides_[0]]; }
  T& operator()(int64_t i, int64_t j) const { return data_[i * strides_[0] + j * strides_[1]]; }
  T& operator()(int64_t i, int64_t j, int64_t k) const {
    return data_[i * strides_[0] + j * strides_[1] + k * strides_[2]];
  }
  T& operator()(int64_t i, int64_t j, int64_t k, int64_t l) const {
    return data_[i * strides_[0] + j * strides_[1] + k * strides_[2] + l * strides_[3]];
  }

  // Checked element access: rank and bounds verified.
  template <class... I>
  T& at(I... index) const {
    static_assert(sizeof...(I) <= kMaxRank, "too many indices");
    LF_CHECK(static_cast<int>(sizeof...(I)) == rank(), "{} indices for a rank-{} tensor {}", sizeof...(I), rank(),
             shape_.str());
    const int64_t idx[] = {static_cast<int64_t>(index)...};
    int64_t offset = 0;
    for (int d = 0; d < rank(); ++d) {
      LF_CHECK(idx[d] >= 0 && idx[d] < shape_[d], "index {} out of range for axis {} of {}", idx[d], d, shape_.str());
      offset += idx[d] * strides_[d];
    }
    return data_[offset];
  }

  // Elements [begin, end) of axis `dim`; the rank is kept.
  TensorView slice(int dim, int64_t begin, int64_t end) const {
    check_axis(dim);
    LF_CHECK(0 <= begin && begin <= end && end <= shape_[dim], "slice [{}, {}) of axis {} of {}", begin, end, dim,
             shape_.str());
    Shape shape = shape_;
    shape[dim] = end - begin;
    return TensorView(data_ + begin * strides_[dim], shape, strides_);
  }

  // Element `index` of axis `dim`; the rank drops by one.
  TensorView select(int dim, int64_t index) const {
    check_axis(dim);
    LF_CHECK(0 <= index && index < shape_[dim], "select {} of axis {} of {}", index, dim, shape_.str());
    return TensorView(data_ + index * strides_[dim], shape_.without_axis(dim), strides_.without_axis(dim));
  }

  // Axes d0 and d1 swapped (no data moves: only the strides).
  TensorView transpose(int d0, int d1) const {
    check_axis(d0);
    check_axis(d1);
    Shape shape = shape_, strides = strides_;
    std::swap(shape[d0], shape[d1]);
    std::swap(strides[d0], strides[d1]);
    return TensorView(data_, shape, strides);
  }

  // Same elements, new shape; only for contiguous views.
  TensorView reshape(Shape shape) const {
    LF_CHECK(is_contiguous(), "reshape of a non-contiguous view {} (strides {})", shape_.str(), strides_.str());
    LF_CHECK(shape.numel() == numel(), "cannot reshape {} into {}", shape_.str(), shape.str());
    return TensorView(data_, shape);
  }

 private:
  void check_axis(int dim) const {
    LF_CHECK(0 <= dim && dim < rank(), "axis {} of a rank-{} tensor {}", dim, rank(), shape_.str());
  }

  T* data_ = nullptr;
  Shape shape_;
  Shape strides_;
};

}  // namespace linformer

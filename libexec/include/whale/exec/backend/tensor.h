// File: tensor.h
// Tensors: TensorView and ConstTensorView (a typed range of a backend's memory: data, element
// count, dtype) and Tensor, an owned, zero-initialised tensor of a Backend (move-only RAII).
// Only the backend reads or writes elements; callers move them with upload, download, copy
// and cast (backend.h).
#pragma once

#include <cstddef>
#include <utility>

#include "whale/exec/backend/dtype.h"

namespace whale::exec {

class Backend;

/// `count` elements of `dtype` at `data`, in the memory of the backend that made them (device
/// memory for a GPU backend). A default (empty) view stands for "no tensor" where an op allows
/// it (e.g. no bias). Shapes are the ops' business: each op states the shape it reads.
struct TensorView {
  void* data = nullptr;
  std::size_t count = 0;
  DType dtype = DType::fp32;

  bool empty() const { return data == nullptr; }
  std::size_t bytes() const { return count * element_bytes(dtype); }
  /// Elements [offset, offset + n) of this view (offset + n <= count).
  TensorView slice(std::size_t offset, std::size_t n) const {
    return {static_cast<char*>(data) + offset * element_bytes(dtype), n, dtype};
  }
  /// The elements as T; for backends, which know where their memory lives.
  template <class T>
  T* as() const { return static_cast<T*>(data); }
};

/// A read-only TensorView; every TensorView converts to one.
struct ConstTensorView {
  const void* data = nullptr;
  std::size_t count = 0;
  DType dtype = DType::fp32;

  ConstTensorView() = default;
  ConstTensorView(const void* d, std::size_t n, DType t) : data(d), count(n), dtype(t) {}
  ConstTensorView(const TensorView& v) : data(v.data), count(v.count), dtype(v.dtype) {}  // NOLINT

  bool empty() const { return data == nullptr; }
  std::size_t bytes() const { return count * element_bytes(dtype); }
  ConstTensorView slice(std::size_t offset, std::size_t n) const {
    return {static_cast<const char*>(data) + offset * element_bytes(dtype), n, dtype};
  }
  template <class T>
  const T* as() const { return static_cast<const T*>(data); }
};

/// An owned tensor: `count` zero elements of `dtype` allocated by a backend, which must outlive
/// it. Converts to views of all of it.
class Tensor {
 public:
  Tensor() = default;
  Tensor(Backend& backend, std::size_t count, DType dtype);
  ~Tensor() { reset(); }
  Tensor(Tensor&& other) noexcept { *this = std::move(other); }
  Tensor& operator=(Tensor&& other) noexcept {
    if (this != &other) {
      reset();
      std::swap(backend_, other.backend_);
      std::swap(view_, other.view_);
    }
    return *this;
  }
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;

  TensorView view() { return view_; }
  ConstTensorView view() const { return view_; }
  operator TensorView() { return view_; }             // NOLINT: a tensor is usable as a view
  operator ConstTensorView() const { return view_; }  // NOLINT
  TensorView slice(std::size_t offset, std::size_t n) { return view_.slice(offset, n); }
  ConstTensorView slice(std::size_t offset, std::size_t n) const {
    return ConstTensorView(view_).slice(offset, n);
  }

  std::size_t count() const { return view_.count; }
  DType dtype() const { return view_.dtype; }
  std::size_t bytes() const { return view_.bytes(); }
  bool empty() const { return view_.data == nullptr; }
  /// Frees the memory now; the tensor becomes empty.
  void reset();

 private:
  Backend* backend_ = nullptr;
  TensorView view_;
};

/// Makes `tensor` hold `count` elements of `dtype`, keeping its memory (and contents) when it
/// already has that size and dtype: for outputs that an op overwrites entirely, which then skip
/// a fresh tensor's zero fill.
void reuse_or_allocate(Tensor& tensor, Backend& backend, std::size_t count, DType dtype);

}  // namespace whale::exec

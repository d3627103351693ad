// File: tensor.cpp
// Tensor: allocation from and release to its backend.
#include "whale/exec/backend/tensor.h"

#include "whale/exec/backend/backend.h"

namespace whale::exec {

Tensor::Tensor(Backend& backend, std::size_t count, DType dtype)
    : backend_(&backend),
      view_{count > 0 ? backend.allocate(count * element_bytes(dtype)) : nullptr, count, dtype} {}

void Tensor::reset() {
  if (view_.data) backend_->release(view_.data);
  view_ = TensorView{nullptr, 0, view_.dtype};
}

void reuse_or_allocate(Tensor& tensor, Backend& backend, std::size_t count, DType dtype) {
  if (tensor.empty() || tensor.count() != count || tensor.dtype() != dtype)
    tensor = Tensor(backend, count, dtype);
}

}  // namespace whale::exec

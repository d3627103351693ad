// File: tensor.h
// Buffer: an owned, zero-initialised float array in a Backend's memory (move-only RAII).
#pragma once

#include <cstddef>
#include <utility>

#include "whale/exec/backend/backend.h"

namespace whale::exec {

class Buffer {
 public:
  Buffer() = default;
  /// `count` zero floats allocated by `backend`, which must outlive the buffer.
  Buffer(Backend& backend, std::size_t count)
      : backend_(&backend), data_(count > 0 ? backend.allocate(count) : nullptr), count_(count) {}
  ~Buffer() { reset(); }
  Buffer(Buffer&& other) noexcept { *this = std::move(other); }
  Buffer& operator=(Buffer&& other) noexcept {
    if (this != &other) {
      reset();
      std::swap(backend_, other.backend_);
      std::swap(data_, other.data_);
      std::swap(count_, other.count_);
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  float* data() { return data_; }
  const float* data() const { return data_; }
  std::size_t count() const { return count_; }
  bool empty() const { return data_ == nullptr; }
  /// Frees the memory now; the buffer becomes empty.
  void reset() {
    if (data_) backend_->release(data_);
    data_ = nullptr;
    count_ = 0;
  }

 private:
  Backend* backend_ = nullptr;
  float* data_ = nullptr;
  std::size_t count_ = 0;
};

}  // namespace whale::exec

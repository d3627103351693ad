// File: host_views.h
// Test helper: views of host vectors, usable as tensors of the CPU backend (whose memory is
// host memory), so that op tests read and write plain std::vectors.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "whale/exec/backend/backend_factory.h"
#include "whale/exec/backend/backend.h"
#include "whale/exec/backend/tensor.h"

namespace whale::exec::test {

inline TensorView host_view(std::vector<float>& v) { return {v.data(), v.size(), DType::fp32}; }
inline ConstTensorView host_view(const std::vector<float>& v) {
  return {v.data(), v.size(), DType::fp32};
}
inline ConstTensorView host_view(const std::vector<int32_t>& v) {
  return {v.data(), v.size(), DType::i32};
}

/// The fp32 CPU backend, as make_backend gives it for a CPU device.
inline std::unique_ptr<Backend> make_cpu_backend(int threads = 1) {
  BackendRequest request;
  request.threads = threads;
  return make_backend(request);
}

}  // namespace whale::exec::test

namespace whale::exec::test {

/// The elements of an fp32 tensor of `backend`, downloaded.
inline std::vector<float> host_floats(Backend& backend, ConstTensorView view) {
  std::vector<float> values(view.count);
  backend.download(values.data(), view, Stream::compute);
  backend.synchronize(Stream::compute);
  return values;
}

}  // namespace whale::exec::test

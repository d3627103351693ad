// File: cuda_warp.h
// Device-side warp butterflies (__shfl_xor_sync, offsets 16..1): the device twin of
// kmath::butterfly_reduce_host, so host tests reproduce the summation order.
#pragma once

#include "backend/kernel_math/host_device.h"
#include "backend/kernel_math/online_softmax.h"

namespace whale::exec::cuda {

constexpr unsigned kFullMask = 0xffffffffu;

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = kmath::kWarpSize / 2; offset > 0; offset /= 2)
    v = v + __shfl_xor_sync(kFullMask, v, offset);
  return v;
}

__device__ __forceinline__ kmath::OnlineSoftmax warp_merge(kmath::OnlineSoftmax s) {
  for (int offset = kmath::kWarpSize / 2; offset > 0; offset /= 2) {
    kmath::OnlineSoftmax other{__shfl_xor_sync(kFullMask, s.max, offset),
                               __shfl_xor_sync(kFullMask, s.sum, offset)};
    s = kmath::online_softmax_merge(s, other);
  }
  return s;
}

}  // namespace whale::exec::cuda

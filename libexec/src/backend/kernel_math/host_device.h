// File: host_device.h
// WHALE_HOST_DEVICE: marks the element arithmetic of the CUDA kernels so that nvcc compiles it
// for both sides and the host C++ compiler (which has no CUDA) compiles it for the host tests.
#pragma once

#if defined(__CUDACC__)
#define WHALE_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define WHALE_HOST_DEVICE inline
#endif

#include <math.h>  // the C float functions (expf, tanhf, sqrtf, logf) exist on both sides

namespace whale::exec::kmath {

/// Threads of a warp; the butterfly reductions below assume it.
constexpr int kWarpSize = 32;

/// Combines lane values the way a warp's __shfl_xor_sync butterfly does (offsets 16, 8, 4, 2,
/// 1; every lane ends with the same value): the host twin of the device reductions, so host
/// tests reproduce the device's summation order bit for bit. `lanes` holds kWarpSize values;
/// lanes[0] holds the result. combine(a, b) must be commutative.
template <class T, class Combine>
inline T butterfly_reduce_host(T* lanes, Combine combine) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    T next[kWarpSize];
    for (int lane = 0; lane < kWarpSize; ++lane) next[lane] = combine(lanes[lane], lanes[lane ^ offset]);
    for (int lane = 0; lane < kWarpSize; ++lane) lanes[lane] = next[lane];
  }
  return lanes[0];
}

}  // namespace whale::exec::kmath

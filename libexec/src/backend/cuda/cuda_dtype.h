// File: cuda_dtype.h
// Storage dtypes of the CUDA kernels (fp32, bf16, fp16): loads widen to fp32, stores round to
// nearest even (the hardware conversions, bit-equal to kmath::float_to_bf16_bits /
// float_to_fp16_bits, which the host tests check against CUDA's functions). Arithmetic is fp32.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace whale::exec::cuda {

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }

template <class T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) { return x; }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }
template <>
__device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }

/// Instantiates a kernel-launch template for the three storage dtypes (INSTANTIATE(T) is a
/// macro the file defines).
#define WHALE_FOR_EACH_DTYPE(INSTANTIATE) \
  INSTANTIATE(float)                      \
  INSTANTIATE(__nv_bfloat16)              \
  INSTANTIATE(__half)

}  // namespace whale::exec::cuda

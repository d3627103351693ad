// File: cuda_chunk.h
// Private to the .cu files: W consecutive elements of a tensor as floats, moved in 16-byte
// vectors (W * sizeof(T) a multiple of 16, the pointer 16-byte aligned) or, with W = 1, one
// element; and the choice of W for a launch.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/cuda/cuda_dtype.h"

namespace whale::exec::cuda {

/// v[0..W) = the W elements at p, as floats.
template <int W, class T>
__device__ __forceinline__ void load_chunk(float (&v)[W], const T* p) {
  if constexpr (W == 1) {
    v[0] = to_float(*p);
  } else {
    static_assert(W * sizeof(T) % 16 == 0, "a chunk is whole 16-byte vectors");
    constexpr int vectors = static_cast<int>(W * sizeof(T) / 16), per_vector = W / vectors;
#pragma unroll
    for (int k = 0; k < vectors; ++k) {
      const uint4 raw = reinterpret_cast<const uint4*>(p)[k];
      const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
      for (int j = 0; j < per_vector; ++j) v[k * per_vector + j] = to_float(e[j]);
    }
  }
}

/// The W elements at p = v, rounded to T.
template <int W, class T>
__device__ __forceinline__ void store_chunk(T* p, const float (&v)[W]) {
  if constexpr (W == 1) {
    *p = from_float<T>(v[0]);
  } else {
    static_assert(W * sizeof(T) % 16 == 0, "a chunk is whole 16-byte vectors");
    constexpr int vectors = static_cast<int>(W * sizeof(T) / 16), per_vector = W / vectors;
#pragma unroll
    for (int k = 0; k < vectors; ++k) {
      uint4 raw;
      T* e = reinterpret_cast<T*>(&raw);
#pragma unroll
      for (int j = 0; j < per_vector; ++j) e[j] = from_float<T>(v[k * per_vector + j]);
      reinterpret_cast<uint4*>(p)[k] = raw;
    }
  }
}

/// Whether every pointer is 16-byte aligned (null counts as aligned).
template <class... P>
bool all_aligned16(const P*... pointers) {
  return ((reinterpret_cast<std::uintptr_t>(pointers) % 16 == 0) && ...);
}

}  // namespace whale::exec::cuda

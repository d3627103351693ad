// File: profile_cuda_kernels.h
// The kernels whale-profile launches itself: an empty kernel (launch overhead), fills of test
// data, and a layernorm and a GELU forward shaped like the model's elementwise kernels.
#pragma once

#include <cstddef>

#include <cuda_runtime.h>

#include "whale/plan/precision.h"

namespace whale::exec::cuda_kernels {

/// Launches a kernel that does nothing (one block of one thread).
void launch_empty(cudaStream_t stream);

/// Fills `count` elements of `data` (stored in `precision`: fp32/tf32 as float, fp16 as half,
/// bf16 as bfloat16) with small deterministic values in [-1, 1).
void fill(void* data, std::size_t count, plan::Precision precision, cudaStream_t stream);

/// out = gelu(in) (tanh approximation), element-wise over `count` floats.
void gelu_forward(float* out, const float* in, std::size_t count, cudaStream_t stream);

/// out[r, :] = (in[r, :] - mean) / sqrt(var + 1e-5) * weight + bias, for `rows` rows of
/// `columns` floats (row-major). One block per row.
void layernorm_forward(float* out, const float* in, const float* weight, const float* bias,
                       int rows, int columns, cudaStream_t stream);

}  // namespace whale::exec::cuda_kernels

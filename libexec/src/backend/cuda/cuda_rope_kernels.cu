// File: cuda_rope_kernels.cu
// Rotary position embedding in place: one thread per rotated pair (row, head, i), kmath's
// rotation (the CPU backend's too); the gradient turns back by the inverse rotation.
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_dtype.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/kernel_math/launch_geometry.h"
#include "backend/kernel_math/rope_math.h"

namespace whale::exec::cuda {
namespace {

template <class T>
__global__ void rope_kernel(T* data, std::size_t pairs, int sequence, int row_channels, int heads,
                            int head_size, double theta, bool inverse) {
  const int half = head_size / 2;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t p = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < pairs;
       p += stride) {
    const int i = static_cast<int>(p % half);
    const std::size_t head_row = p / half;  // n * heads + h
    const std::size_t n = head_row / heads;
    const int h = static_cast<int>(head_row % heads);
    const kmath::RopeRotation r =
        kmath::rope_rotation(static_cast<int>(n % sequence), i, head_size, theta);
    T* x = data + n * row_channels + static_cast<std::size_t>(h) * head_size;
    const float x1 = to_float(x[i]), x2 = to_float(x[i + half]);
    const kmath::RopePair out = inverse ? kmath::rope_rotate_back(x1, x2, r) : kmath::rope_rotate(x1, x2, r);
    x[i] = from_float<T>(out.first);
    x[i + half] = from_float<T>(out.second);
  }
}

}  // namespace

template <class T>
void rope(cudaStream_t stream, T* data, int batch, int sequence, int row_channels, int heads,
          int head_size, double theta, bool inverse) {
  const std::size_t pairs =
      static_cast<std::size_t>(batch) * sequence * heads * static_cast<std::size_t>(head_size / 2);
  const kmath::Launch l = kmath::elementwise_launch(pairs);
  if (l.grid_x == 0) return;
  rope_kernel<<<l.grid_x, l.block, 0, stream>>>(data, pairs, sequence, row_channels, heads,
                                                head_size, theta, inverse);
  WHALE_CUDA_CHECK_LAUNCH();
}

#define WHALE_INSTANTIATE_ROPE(T) \
  template void rope<T>(cudaStream_t, T*, int, int, int, int, int, double, bool);
WHALE_FOR_EACH_DTYPE(WHALE_INSTANTIATE_ROPE)

}  // namespace whale::exec::cuda

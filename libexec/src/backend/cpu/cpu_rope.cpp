// File: cpu_rope.cpp
// CPU rotary position embedding, forward and backward in place: the rotation of each pair is
// kmath's (shared with the CUDA kernel), one position's cos/sin table per row.
#include <vector>

#include "backend/cpu/cpu_backend_impl.h"
#include "backend/kernel_math/rope_math.h"

namespace whale::exec::cpu {

void Fp32Kernels::rope(float* data, int batch, int sequence, int row_channels, int heads,
                       int head_size, double theta, bool inverse) {
  const int half = head_size / 2;
  pool_.parallel_for(static_cast<std::ptrdiff_t>(batch) * sequence, [&](std::ptrdiff_t n) {
    thread_local std::vector<kmath::RopeRotation> rotations;
    rotations.resize(half);
    const int position = static_cast<int>(n % sequence);
    for (int i = 0; i < half; ++i) rotations[i] = kmath::rope_rotation(position, i, head_size, theta);
    float* row = data + static_cast<std::size_t>(n) * row_channels;
    for (int h = 0; h < heads; ++h) {
      float* x = row + static_cast<std::size_t>(h) * head_size;
      for (int i = 0; i < half; ++i) {
        const kmath::RopePair p = inverse ? kmath::rope_rotate_back(x[i], x[i + half], rotations[i])
                                          : kmath::rope_rotate(x[i], x[i + half], rotations[i]);
        x[i] = p.first;
        x[i + half] = p.second;
      }
    }
  });
}

}  // namespace whale::exec::cpu

// File: cpu_dropout.cpp
// CPU dropout: each element times its mask factor (kernel_math/dropout_math.h), rows in parallel.
#include "backend/cpu/cpu_backend_impl.h"

namespace whale::exec::cpu {

void Fp32Kernels::dropout(float* data, const kmath::DropoutScalars& mask, uint64_t first_row,
                          int rows, int channels) {
  pool_.parallel_for(rows, [&](std::ptrdiff_t r) {  // rows are independent
    float* row = data + static_cast<std::size_t>(r) * channels;
    const uint64_t mask_row = first_row + static_cast<uint64_t>(r);
    for (int c = 0; c < channels; ++c)
      row[c] *= kmath::dropout_factor(mask, mask_row, static_cast<uint64_t>(c));
  });
}

}  // namespace whale::exec::cpu

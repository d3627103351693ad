// File: cpu_optimizer.cpp
// CPU optimizer updates (element-wise, state kept in float, arithmetic in double): AdamW,
// vectorised with Eigen arrays over chunks (Eigen's packet sqrt is accurate to about one double
// ulp), and SGD with momentum.
#include <algorithm>
#include <cmath>

#include "backend/cpu/cpu_backend_impl.h"

namespace whale::exec::cpu {

void Fp32Kernels::adamw_update(float* param, const float* grad, float* m, float* v,
                               std::size_t count, double lr, double beta1, double beta2, double eps,
                               double weight_decay, int step) {
  const double m_correction = 1.0 - std::pow(beta1, step);
  const double v_correction = 1.0 - std::pow(beta2, step);
  // Chunks are widened to double first and narrowed last, so that the update in between is pure
  // double arrays, which Eigen vectorises (division and sqrt included).
  constexpr std::size_t kChunk = 256;
  using Chunk = Eigen::Array<double, kChunk, 1>;
  const auto chunks = static_cast<std::ptrdiff_t>((count + kChunk - 1) / kChunk);
  pool_.parallel_for(chunks, [&](std::ptrdiff_t chunk) {  // chunks are independent
    Chunk g_chunk, m_chunk, v_chunk, p_chunk;
    const std::size_t begin = static_cast<std::size_t>(chunk) * kChunk;
    const Eigen::Index n = static_cast<Eigen::Index>(std::min(kChunk, count - begin));
    // Zero-padded to whole 8-double packets: every element takes the packet path (Eigen's
    // packet and scalar sqrt may differ in the last bit), so its result depends on its values
    // only, not on where the chunk boundaries fall.
    const Eigen::Index padded = (n + 7) / 8 * 8;
    for (Chunk* chunk : {&g_chunk, &m_chunk, &v_chunk, &p_chunk})
      chunk->segment(n, padded - n).setZero();
    ArrayMap m_out(m + begin, n), v_out(v + begin, n), p_out(param + begin, n);
    g_chunk.head(n) = ConstArrayMap(grad + begin, n).cast<double>();
    m_chunk.head(n) = m_out.cast<double>();
    v_chunk.head(n) = v_out.cast<double>();
    p_chunk.head(n) = p_out.cast<double>();
    auto g = g_chunk.head(padded);
    auto m_new = m_chunk.head(padded);
    auto v_new = v_chunk.head(padded);
    auto p = p_chunk.head(padded);
    m_new = beta1 * m_new + (1.0 - beta1) * g;
    v_new = beta2 * v_new + (1.0 - beta2) * g * g;
    p -= lr * ((m_new / m_correction) / ((v_new / v_correction).sqrt() + eps) + weight_decay * p);
    m_out = m_chunk.head(n).cast<float>();
    v_out = v_chunk.head(n).cast<float>();
    p_out = p_chunk.head(n).cast<float>();
  });
}

void Fp32Kernels::sgd_update(float* param, const float* grad, float* momentum_buffer,
                             std::size_t count, double lr, double momentum, double weight_decay) {
  constexpr std::ptrdiff_t kChunk = 4096;
  const auto n = static_cast<std::ptrdiff_t>(count);
  pool_.parallel_for((n + kChunk - 1) / kChunk, [&](std::ptrdiff_t chunk) {  // independent
    const std::ptrdiff_t end = std::min(n, (chunk + 1) * kChunk);
    for (std::ptrdiff_t i = chunk * kChunk; i < end; ++i) {
      const double p = param[i];
      const double buffer = momentum * momentum_buffer[i] + (grad[i] + weight_decay * p);
      momentum_buffer[i] = static_cast<float>(buffer);
      param[i] = static_cast<float>(p - lr * buffer);
    }
  });
}

}  // namespace whale::exec::cpu

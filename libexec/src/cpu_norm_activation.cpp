// File: cpu_norm_activation.cpp
// CPU layernorm and GELU (tanh approximation), forward and backward.
#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu_backend_impl.h"

namespace whale::exec::cpu {
namespace {
constexpr double kLayernormEps = 1e-5;
constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluCubic = 0.044715f;
}  // namespace

void CpuBackend::layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                                   const float* weight, const float* bias, int rows,
                                   int channels) {
  for (int r = 0; r < rows; ++r) {
    const float* x = inp + static_cast<std::size_t>(r) * channels;
    float* y = out + static_cast<std::size_t>(r) * channels;
    double sum = 0.0;
    for (int c = 0; c < channels; ++c) sum += x[c];
    const double mu = sum / channels;
    double squares = 0.0;
    for (int c = 0; c < channels; ++c) squares += (x[c] - mu) * (x[c] - mu);
    const double s = 1.0 / std::sqrt(squares / channels + kLayernormEps);
    for (int c = 0; c < channels; ++c)
      y[c] = static_cast<float>((x[c] - mu) * s) * weight[c] + bias[c];
    mean[r] = static_cast<float>(mu);
    rstd[r] = static_cast<float>(s);
  }
}

void CpuBackend::layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                    const float* inp, const float* weight, const float* mean,
                                    const float* rstd, int rows, int channels) {
  std::vector<double> dweight_sum(channels, 0.0), dbias_sum(channels, 0.0);
  for (int r = 0; r < rows; ++r) {
    const std::size_t base = static_cast<std::size_t>(r) * channels;
    const float* x = inp + base;
    const float* dy = dout + base;
    double dnorm_mean = 0.0, dnorm_norm_mean = 0.0;
    for (int c = 0; c < channels; ++c) {
      const double norm = (x[c] - mean[r]) * static_cast<double>(rstd[r]);
      const double dnorm = static_cast<double>(dy[c]) * weight[c];
      dnorm_mean += dnorm;
      dnorm_norm_mean += dnorm * norm;
      dweight_sum[c] += norm * dy[c];
      dbias_sum[c] += dy[c];
    }
    dnorm_mean /= channels;
    dnorm_norm_mean /= channels;
    for (int c = 0; c < channels; ++c) {
      const double norm = (x[c] - mean[r]) * static_cast<double>(rstd[r]);
      const double dnorm = static_cast<double>(dy[c]) * weight[c];
      dinp[base + c] += static_cast<float>((dnorm - dnorm_mean - norm * dnorm_norm_mean) *
                                           rstd[r]);
    }
  }
  for (int c = 0; c < channels; ++c) {
    dweight[c] += static_cast<float>(dweight_sum[c]);
    dbias[c] += static_cast<float>(dbias_sum[c]);
  }
}

void CpuBackend::gelu_forward(float* out, const float* inp, std::size_t count) {
  const ConstArrayMap x(inp, static_cast<Eigen::Index>(count));
  ArrayMap(out, static_cast<Eigen::Index>(count)) =
      0.5f * x * (1.0f + (kGeluScale * (x + kGeluCubic * x.cube())).tanh());
}

void CpuBackend::gelu_backward(float* dinp, const float* inp, const float* dout,
                               std::size_t count) {
  // Chunks keep tanh's values in a stack buffer (no heap temporary): Eigen vectorises tanh.
  constexpr std::size_t kChunk = 1024;
  float tanh_buffer[kChunk];
  for (std::size_t begin = 0; begin < count; begin += kChunk) {
    const Eigen::Index n = static_cast<Eigen::Index>(std::min(kChunk, count - begin));
    const ConstArrayMap x(inp + begin, n), dy(dout + begin, n);
    ArrayMap t(tanh_buffer, n);
    t = (kGeluScale * (x + kGeluCubic * x.cube())).tanh();
    ArrayMap(dinp + begin, n) +=
        dy * (0.5f * (1.0f + t) +
              0.5f * x * (1.0f - t.square()) * kGeluScale * (1.0f + 3.0f * kGeluCubic * x.square()));
  }
}

}  // namespace whale::exec::cpu

// File: cuda_pointwise_kernels.cu
// Point-wise CUDA kernels: GELU and SwiGLU forward/backward, residual add, accumulate, bias add/grad,
// dropout and dtype casts; grid-stride loops over kmath::elementwise_launch, in 16-byte chunks where the
// pointers allow (launch_map).
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_column_sum.cuh"
#include "backend/cuda/cuda_dtype.h"
#include "backend/cuda/cuda_elementwise.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/kernel_math/dropout_math.h"
#include "backend/kernel_math/elementwise_math.h"
#include "backend/kernel_math/launch_geometry.h"

namespace whale::exec::cuda {

template <class T>
void gelu_forward(cudaStream_t stream, T* out, const T* inp, std::size_t count) {
  launch_map(stream, count, [] __device__(float x) { return kmath::gelu_forward(x); }, out, inp);
}

template <class T>
void gelu_backward(cudaStream_t stream, T* dinp, const T* inp, const T* dout, std::size_t count) {
  launch_map(
      stream, count,
      [] __device__(float d, float x, float g) { return d + kmath::gelu_derivative(x) * g; }, dinp,
      static_cast<const T*>(dinp), inp, dout);
}

template <class T>
void swiglu_forward(cudaStream_t stream, T* out, const T* gate, const T* up, std::size_t count) {
  launch_elementwise(stream, count, [=] __device__(std::size_t i) {
    out[i] = from_float<T>(kmath::swiglu_forward(to_float(gate[i]), to_float(up[i])));
  });
}

template <class T>
void swiglu_backward(cudaStream_t stream, T* dgate, T* dup, const T* gate, const T* up,
                     const T* dout, std::size_t count) {
  launch_elementwise(stream, count, [=] __device__(std::size_t i) {
    const kmath::SwigluGrad g =
        kmath::swiglu_backward(to_float(gate[i]), to_float(up[i]), to_float(dout[i]));
    dgate[i] = from_float<T>(to_float(dgate[i]) + g.dgate);
    dup[i] = from_float<T>(to_float(dup[i]) + g.dup);
  });
}

template <class T>
void add_forward(cudaStream_t stream, T* out, const T* a, const T* b, std::size_t count) {
  launch_map(stream, count, [] __device__(float x, float y) { return kmath::residual_add(x, y); },
             out, a, b);
}

template <class T>
void accumulate(cudaStream_t stream, T* dst, const T* src, std::size_t count) {
  add_forward(stream, dst, dst, src, count);
}

template <class T>
void bias_add_forward(cudaStream_t stream, T* out, const T* bias, int rows, int channels) {
  launch_elementwise(stream, static_cast<std::size_t>(rows) * channels,
                     [=] __device__(std::size_t i) {
                       out[i] = from_float<T>(kmath::residual_add(
                           to_float(out[i]), to_float(bias[kmath::channel_of(i, channels)])));
                     });
}

template <class T>
void bias_add_backward(cudaStream_t stream, float* dbias, const T* dout, int rows, int channels,
                       double* partials) {
  column_sum(stream, dbias, partials, rows, channels, [=] __device__(int r, int c) {
    return static_cast<double>(to_float(dout[static_cast<std::size_t>(r) * channels + c]));
  });
}

template <class Dst, class Src>
void cast(cudaStream_t stream, Dst* dst, const Src* src, std::size_t count) {
  launch_map(stream, count, [] __device__(float x) { return x; }, dst, src);
}

template <class T>
void scale(cudaStream_t stream, T* data, float factor, std::size_t count) {
  launch_elementwise(stream, count,
                     [=] __device__(std::size_t i) { data[i] = from_float<T>(to_float(data[i]) * factor); });
}

template <class T>
void dropout(cudaStream_t stream, T* data, const kmath::DropoutScalars& mask, uint64_t first_row,
             int rows, int channels) {
  const kmath::DropoutScalars m = mask;  // by value into the kernel
  launch_elementwise(stream, static_cast<std::size_t>(rows) * channels, [=] __device__(std::size_t i) {
    const uint64_t row = first_row + i / static_cast<std::size_t>(channels);
    data[i] = from_float<T>(to_float(data[i]) * kmath::dropout_factor(m, row, i % static_cast<std::size_t>(channels)));
  });
}

template <class T>
void find_non_finite(cudaStream_t stream, int* flag, const T* data, std::size_t count) {
  // Every writer stores the same 1: the result does not depend on their order.
  launch_elementwise(stream, count, [=] __device__(std::size_t i) {
    if (!isfinite(to_float(data[i]))) *flag = 1;
  });
}

#define WHALE_INSTANTIATE_POINTWISE(T)                                                      \
  template void gelu_forward<T>(cudaStream_t, T*, const T*, std::size_t);                  \
  template void gelu_backward<T>(cudaStream_t, T*, const T*, const T*, std::size_t);       \
  template void swiglu_forward<T>(cudaStream_t, T*, const T*, const T*, std::size_t);      \
  template void swiglu_backward<T>(cudaStream_t, T*, T*, const T*, const T*, const T*,     \
                                   std::size_t);                                           \
  template void add_forward<T>(cudaStream_t, T*, const T*, const T*, std::size_t);         \
  template void accumulate<T>(cudaStream_t, T*, const T*, std::size_t);                    \
  template void bias_add_forward<T>(cudaStream_t, T*, const T*, int, int);                 \
  template void bias_add_backward<T>(cudaStream_t, float*, const T*, int, int, double*);                \
  template void scale<T>(cudaStream_t, T*, float, std::size_t);                            \
  template void dropout<T>(cudaStream_t, T*, const kmath::DropoutScalars&, uint64_t, int, int); \
  template void find_non_finite<T>(cudaStream_t, int*, const T*, std::size_t);
WHALE_FOR_EACH_DTYPE(WHALE_INSTANTIATE_POINTWISE)
template void cast<float, float>(cudaStream_t, float*, const float*, std::size_t);
template void cast<__nv_bfloat16, float>(cudaStream_t, __nv_bfloat16*, const float*, std::size_t);
template void cast<__half, float>(cudaStream_t, __half*, const float*, std::size_t);
template void cast<float, __nv_bfloat16>(cudaStream_t, float*, const __nv_bfloat16*, std::size_t);
template void cast<float, __half>(cudaStream_t, float*, const __half*, std::size_t);

}  // namespace whale::exec::cuda

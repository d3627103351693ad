// File: cpu_convert.cpp
// Host dtype conversions (Eigen's bfloat16 and half round to nearest even) and Fp32Operands.
#include "backend/cpu/cpu_convert.h"

#include <Eigen/Core>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace whale::exec::cpu {
namespace {

void require_float(DType dtype, const char* what) {
  if (!is_float(dtype))
    throw std::invalid_argument(std::string("cpu backend: ") + what + " needs a float dtype, got " +
                                dtype_name(dtype));
}

}  // namespace

void widen(ConstTensorView src, float* dst) {
  require_float(src.dtype, "widen");
  const std::size_t n = src.count;
  switch (src.dtype) {
    case DType::fp32: std::copy(src.as<float>(), src.as<float>() + n, dst); break;
    case DType::bf16: {
      const auto* s = src.as<Eigen::bfloat16>();
      for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(s[i]);
      break;
    }
    case DType::fp16: {
      const auto* s = src.as<Eigen::half>();
      for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(s[i]);
      break;
    }
    case DType::i32: break;
  }
}

void narrow(const float* src, TensorView dst) {
  require_float(dst.dtype, "narrow");
  const std::size_t n = dst.count;
  switch (dst.dtype) {
    case DType::fp32: std::copy(src, src + n, dst.as<float>()); break;
    case DType::bf16: {
      auto* d = dst.as<Eigen::bfloat16>();
      for (std::size_t i = 0; i < n; ++i) d[i] = Eigen::bfloat16(src[i]);
      break;
    }
    case DType::fp16: {
      auto* d = dst.as<Eigen::half>();
      for (std::size_t i = 0; i < n; ++i) d[i] = Eigen::half(src[i]);
      break;
    }
    case DType::i32: break;
  }
}

float* Fp32Operands::scratch(std::size_t count) {
  scratch_.push_back(std::make_unique<float[]>(std::max<std::size_t>(count, 1)));
  return scratch_.back().get();
}

const float* Fp32Operands::in(ConstTensorView view) {
  if (view.empty()) return nullptr;
  require_float(view.dtype, "an input");
  if (view.dtype == DType::fp32) return view.as<float>();
  float* values = scratch(view.count);
  widen(view, values);
  return values;
}

float* Fp32Operands::out(TensorView view, bool accumulate) {
  if (view.empty()) return nullptr;
  require_float(view.dtype, "an output");
  if (view.dtype == DType::fp32) return view.as<float>();
  float* values = scratch(view.count);
  if (accumulate) widen(view, values);
  outputs_.push_back({values, view});
  return values;
}

void Fp32Operands::finish() {
  for (const Output& o : outputs_) narrow(o.values, o.view);
  outputs_.clear();
}

}  // namespace whale::exec::cpu

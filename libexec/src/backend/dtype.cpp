// File: dtype.cpp
// Element sizes and names of the backend dtypes; the compute dtype of a plan precision.
#include "whale/exec/backend/dtype.h"

namespace whale::exec {

std::size_t element_bytes(DType dtype) {
  switch (dtype) {
    case DType::fp32: return 4;
    case DType::bf16: return 2;
    case DType::fp16: return 2;
    case DType::i32: return 4;
  }
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::fp32: return "fp32";
    case DType::bf16: return "bf16";
    case DType::fp16: return "fp16";
    case DType::i32: return "i32";
  }
  return "?";
}

bool is_float(DType dtype) { return dtype != DType::i32; }

DType compute_dtype(plan::Precision precision) {
  switch (precision) {
    case plan::Precision::bf16: return DType::bf16;
    case plan::Precision::fp16: return DType::fp16;
    case plan::Precision::fp32:
    case plan::Precision::tf32: return DType::fp32;
  }
  return DType::fp32;
}

}  // namespace whale::exec

// File: precision.cpp
// Names and element sizes of precisions.
#include "whale/plan/precision.h"

namespace whale::plan {

const char* to_string(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::tf32: return "tf32";
    case Precision::fp16: return "fp16";
    case Precision::bf16: return "bf16";
  }
  return "?";
}

bool parse_precision(const std::string& text, Precision* out) {
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::fp16, Precision::bf16}) {
    if (text == to_string(p)) {
      *out = p;
      return true;
    }
  }
  return false;
}

int bytes_per_element(Precision p) {
  return (p == Precision::fp16 || p == Precision::bf16) ? 2 : 4;
}

}  // namespace whale::plan

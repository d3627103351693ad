// File: precision.h
// Numeric precisions of training and of device peaks.
#pragma once

#include <string>

namespace whale::plan {

enum class Precision { fp32, tf32, fp16, bf16 };

/// "fp32", "tf32", "fp16" or "bf16".
const char* to_string(Precision p);
/// Parses the names above; returns false on anything else.
bool parse_precision(const std::string& text, Precision* out);
/// Bytes of one element stored in this precision (tf32 is stored as 4 bytes).
int bytes_per_element(Precision p);

}  // namespace whale::plan

// File: cuda_check.cpp
// The failure path of the GPU check macros.
#include "backend/cuda/cuda_check.h"

#include <stdexcept>
#include <string>

namespace whale::exec {

void gpu_check_failed(const char* library, const char* error, const char* call,
                      const char* file, int line) {
  throw std::runtime_error(std::string(library) + " call " + call + " failed at " + file + ":" +
                           std::to_string(line) + ": " + error);
}

const char* cublas_status_name(cublasStatus_t status) { return cublasGetStatusString(status); }

const char* cupti_result_name(CUptiResult result) {
  const char* text = nullptr;
  if (cuptiGetResultString(result, &text) != CUPTI_SUCCESS || text == nullptr)
    return "unknown CUPTI error";
  return text;
}

}  // namespace whale::exec

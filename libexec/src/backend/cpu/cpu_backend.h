// File: cpu_backend.h
// Private: the CPU backend's constructor, called by make_backend (backend_factory.cpp): Eigen
// GEMMs on host memory, deterministic whatever its thread count.
#pragma once

#include <memory>

#include "whale/exec/backend/backend.h"

namespace whale::exec {

/// A Backend on host memory computing in `compute` (fp32, bf16 or fp16) with `threads` threads.
std::unique_ptr<Backend> make_cpu_backend(DType compute, int threads);

}  // namespace whale::exec

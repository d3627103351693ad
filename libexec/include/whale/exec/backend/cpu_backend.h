// File: cpu_backend.h
// The CPU Backend: Eigen GEMMs on mapped host buffers, single-threaded and deterministic.
#pragma once

#include <memory>

#include "whale/exec/backend/backend.h"

namespace whale::exec {

std::unique_ptr<Backend> make_cpu_backend();

}  // namespace whale::exec

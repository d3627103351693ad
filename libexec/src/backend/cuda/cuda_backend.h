// File: cuda_backend.h
// Private: the CUDA backend's constructor, called by make_backend (backend_factory.cpp) for a
// GPU device. Implemented under backend/cuda/ and compiled only when WHALE_HAVE_CUDA.
#pragma once

#include <memory>

#include "whale/exec/backend/backend.h"
#include "whale/exec/backend/backend_factory.h"

namespace whale::exec {

/// A Backend on GPU request.local_gpu computing in compute_dtype(request.precision), with its
/// own compute, communication and copy streams. Throws whale::Error when the GPU is missing.
std::unique_ptr<Backend> make_cuda_backend(const BackendRequest& request);

}  // namespace whale::exec

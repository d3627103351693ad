// File: pointer_location.h
// Private to comm/: where a pointer points (GPU device memory or host memory), so that the MPI
// paths can refuse device pointers: whale's Open MPI is not CUDA-aware, and no device pointer
// may ever reach it.
#pragma once

namespace whale::exec {

/// True when `data` points into GPU device memory. A build with CUDA asks the CUDA runtime
/// (cudaPointerGetAttributes) when the machine has a GPU; otherwise false.
bool is_device_pointer(const void* data);

/// Throws whale::InternalError naming `call` when `data` is device memory: a device buffer was
/// handed to an MPI call, which would read or write it as host memory.
void check_host_pointer(const void* data, const char* call);

}  // namespace whale::exec

// File: backend_factory.h
// The one place where a rank's Backend is made: from the device the plan gives the rank (a
// CPU, or a GPU model of the cluster), the plan's precision, the thread count and the
// emulated slowdown. Model, executor and optimizer receive the backend; none makes its own.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "whale/exec/backend/backend.h"
#include "whale/plan/precision.h"

namespace whale::exec {

struct BackendRequest {
  /// The plan file the device comes from, for error messages.
  std::string plan_file;
  /// The device's kind as its profile says: "cpu" or "gpu".
  std::string device_kind = "cpu";
  /// The device model (profile name), e.g. "a100-sxm4-80gb"; for messages.
  std::string device_name = "cpu";
  /// The GPU index on this node (local rank order) for a GPU device; ignored on the CPU.
  int local_gpu = 0;
  /// Bytes of a GPU backend's device arena (from the plan's predicted peak plus a margin,
  /// arena_bytes_for_peak); 0 takes the CUDA backend's default (CudaBackendOptions).
  std::size_t arena_bytes = 0;
  /// The plan's training precision: it sets the backend's compute_dtype().
  plan::Precision precision = plan::Precision::fp32;
  /// CPU threads of the backend's ops (>= 1).
  int threads = 1;
  /// Emulated slowdown (>= 1): every compute op is stretched by this factor.
  double slowdown_factor = 1.0;
};

/// The number of CUDA devices this process sees; -1 in a build without the CUDA backend, and 0
/// where the driver finds none.
int local_gpu_count();

/// The backend of `request`: the CPU backend for a "cpu" device, the CUDA backend for a "gpu"
/// device when whale was built with it; wrapped in the slowdown decorator when
/// slowdown_factor > 1. Throws whale::Error naming the device, with a hint (run on CPU ranks
/// with `whale-run --device cpu`), for a GPU device in a build without CUDA, and for an
/// unknown kind or a thread count below 1.
std::unique_ptr<Backend> make_backend(const BackendRequest& request);

}  // namespace whale::exec

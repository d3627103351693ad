// File: profile_cuda_factory.h
// Constructors of the CUDA implementations of whale-profile's interfaces (private to libexec;
// compiled only when WHALE_HAVE_CUDA).
#pragma once

#include <memory>

#include "whale/exec/profile/profile_device_prober.h"
#include "whale/exec/profile/profile_links.h"

namespace whale::exec {

/// The number of CUDA devices; throws whale::Error "no CUDA device ..." when the runtime
/// reports none or fails to count them (no driver, no GPU).
int require_cuda_devices(const char* what);

/// The prober of CUDA device `index`. Throws whale::Error "no CUDA device ..." as above, or
/// when `index` is not below the device count.
std::unique_ptr<DeviceProber> make_cuda_prober(int index);

/// An NCCL endpoint over MPI_COMM_WORLD: rank r uses device (index + local rank) mod count.
std::unique_ptr<LinkEndpoint> make_nccl_link_endpoint(int index, const RankPlacement& placement);

}  // namespace whale::exec

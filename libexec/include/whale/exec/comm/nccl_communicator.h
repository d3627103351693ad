// File: nccl_communicator.h
// The NCCL implementation of Communicator (GPU memory) and the CUDA staging of the host-memory
// bridge. Declared without CUDA headers; defined only in builds with WHALE_HAVE_CUDA
// (libexec/src/comm/cuda/), so callers guard their calls with `#if WHALE_HAVE_CUDA`.
#pragma once

#include <mpi.h>

#include <memory>

#include "whale/exec/comm/communicator.h"
#include "whale/exec/comm/host_bridge_communicator.h"

namespace whale::exec {

/// An NCCL communicator over exactly the ranks of `members`, whose ownership it takes (it frees
/// it). Bootstrap: rank 0 of `members` calls ncclGetUniqueId, MPI_Bcast sends the id to the
/// others, each calls ncclCommInitRank on GPU `gpu` (a CUDA ordinal of this host). Every call
/// on the result takes device pointers of that GPU and synchronizes its stream before it
/// returns. NCCL point-to-point has no tags: messages to one peer match in issue order.
/// Collective: every member calls it. Failures throw std::runtime_error naming the call.
std::unique_ptr<Communicator> make_nccl_communicator(MPI_Comm members, int gpu);

/// Staging between GPU `gpu`'s memory and host memory (cudaMemcpy), for the host bridge.
std::shared_ptr<DeviceStaging> make_cuda_staging(int gpu);

}  // namespace whale::exec

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
/// on the result takes device pointers of that GPU and runs on the communicator's own stream.
/// With `compute_stream` (a cudaStream_t, the rank's backend compute stream): each collective
/// starts after the work issued on that stream so far and the stream's later work waits for
/// it (CUDA events, no host synchronisation); a call "returns complete" and a request
/// "completes" for that stream, which is where the data is read next. Without one, every
/// call and wait() blocks the host until the collective is done. NCCL point-to-point has no
/// tags: messages to one peer match in issue order. Collective: every member calls it.
/// Failures throw std::runtime_error naming the call.
std::unique_ptr<Communicator> make_nccl_communicator(MPI_Comm members, int gpu,
                                                     void* compute_stream = nullptr);

/// Staging between GPU `gpu`'s memory and host memory for the host bridge: cudaMemcpyAsync on
/// a stream of its own through a pinned host buffer. Downloads start after the work issued on
/// `compute_stream` (a cudaStream_t, or null) so far; uploads go at once (the bridge uploads a
/// collective's result only where its download already waited); each call returns once its
/// copy is done.
std::shared_ptr<DeviceStaging> make_cuda_staging(int gpu, void* compute_stream = nullptr);

}  // namespace whale::exec

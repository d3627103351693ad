// File: group_communicator.h
// One place that turns (members, transport) into a Communicator: NCCL, MPI, or the host-memory
// bridge; callers never branch on the device kind themselves.
#pragma once

#include <mpi.h>

#include <memory>
#include <vector>

#include "whale/exec/comm/communicator.h"
#include "whale/exec/comm/transport_choice.h"

namespace whale::exec {

/// The communicator of `members` (ranks of `parent`, new rank i = members[i]) over `kind`;
/// called by the members only (collective over them). `gpu` is the CUDA ordinal this rank
/// drives, or -1 on a CPU rank; `compute_stream` the cudaStream_t of its backend's compute
/// stream (Backend::native_stream), or null: NCCL and the bridge's copies start after the work
/// issued on it so far, and work issued on it later sees their results.
/// - nccl: NCCL on `gpu`, bootstrapped over an MPI communicator of the members;
/// - mpi: MPI on host memory;
/// - host_bridge: MPI on host buffers, staged from and to this rank's memory (CUDA copies on
///   `gpu`, plain copies when `gpu` is -1).
/// Throws whale::Error when nccl, or host_bridge with a GPU, is asked of a build without
/// CUDA, and std::logic_error for nccl with `gpu` -1.
std::unique_ptr<Communicator> make_group_communicator(MPI_Comm parent,
                                                      const std::vector<int>& members,
                                                      TransportKind kind, int gpu,
                                                      void* compute_stream = nullptr);

}  // namespace whale::exec

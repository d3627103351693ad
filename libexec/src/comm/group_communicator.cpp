// File: group_communicator.cpp
// make_group_communicator: NCCL, MPI or the host bridge for a list of members.
#include "whale/exec/comm/group_communicator.h"

#include <stdexcept>
#include <string>

#include "whale/exec/comm/host_bridge_communicator.h"
#include "whale/exec/comm/mpi_communicator.h"
#include "whale/exec/comm/nccl_communicator.h"
#include "whale/plan/error.h"

namespace whale::exec {
namespace {

#if !WHALE_HAVE_CUDA
[[noreturn]] void no_cuda_build(TransportKind kind) {
  throw Error("", "devices",
              std::string("a whale build with CUDA for the ") + to_string(kind) +
                  " transport between GPU ranks",
              "this build has no CUDA: configure on a machine with nvcc, NCCL and CUPTI under "
              "/usr/local/cuda (WHALE_CUDA=ON), or plan on CPU devices");
}
#endif

std::unique_ptr<Communicator> mpi_group(MPI_Comm parent, const std::vector<int>& members) {
  MPI_Comm created = create_mpi_subgroup(parent, members);
  std::unique_ptr<Communicator> comm = make_mpi_communicator(created);  // wraps a duplicate
  MPI_Comm_free(&created);
  return comm;
}

std::shared_ptr<DeviceStaging> staging_for(int gpu, void* compute_stream) {
  if (gpu < 0) return make_host_staging();
#if WHALE_HAVE_CUDA
  return make_cuda_staging(gpu, compute_stream);
#else
  (void)compute_stream;
  no_cuda_build(TransportKind::host_bridge);
#endif
}

}  // namespace

std::unique_ptr<Communicator> make_group_communicator(MPI_Comm parent,
                                                      const std::vector<int>& members,
                                                      TransportKind kind, int gpu,
                                                      void* compute_stream) {
  switch (kind) {
    case TransportKind::mpi:
      return mpi_group(parent, members);
    case TransportKind::host_bridge:
      return std::make_unique<HostBridgeCommunicator>(mpi_group(parent, members),
                                                      staging_for(gpu, compute_stream));
    case TransportKind::nccl:
      if (gpu < 0) throw std::logic_error("make_group_communicator: nccl on a CPU rank");
#if WHALE_HAVE_CUDA
      return make_nccl_communicator(create_mpi_subgroup(parent, members), gpu, compute_stream);
#else
      no_cuda_build(kind);
#endif
  }
  throw std::logic_error("make_group_communicator: unknown transport");
}

}  // namespace whale::exec

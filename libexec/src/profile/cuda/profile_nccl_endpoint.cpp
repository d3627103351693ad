// File: profile_nccl_endpoint.cpp
// NcclLinkEndpoint: an NCCL communicator over MPI_COMM_WORLD (make_nccl_communicator) and its
// device buffer, for whale-profile's link sweep.
#include <mpi.h>

#include "profile/cuda/profile_cuda_buffer.h"
#include "backend/cuda/cuda_check.h"
#include "profile/cuda/profile_cuda_factory.h"
#include "whale/exec/comm/mpi_communicator.h"
#include "whale/exec/comm/nccl_communicator.h"

namespace whale::exec {
namespace {

/// "nvlink" when devices `a` and `b` have peer access with native atomics (an NVLink
/// property on current systems), "pcie" otherwise: a label for the cluster YAML.
std::string intra_node_kind(int a, int b) {
  if (a == b) return "shm";
  int access = 0, atomics = 0;
  WHALE_CUDA_CHECK(cudaDeviceCanAccessPeer(&access, a, b));
  if (access)
    WHALE_CUDA_CHECK(cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, a, b));
  return access && atomics ? "nvlink" : "pcie";
}

class NcclLinkEndpoint : public LinkEndpoint {
 public:
  NcclLinkEndpoint(int index, const RankPlacement& placement, int device_count)
      : placement_(placement) {
    const int device = (index + placement.local_rank) % device_count;
    kind_ = placement.single_host ? intra_node_kind(index % device_count,
                                                    (index + 1) % device_count)
                                  : "infiniband";
    MPI_Comm world = MPI_COMM_NULL;
    WHALE_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &world));
    WHALE_MPI_CHECK(MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN));
    comm_ = make_nccl_communicator(world, device);
  }
  Communicator& communicator() override { return *comm_; }
  float* buffer(std::size_t count) override {
    if (data_.bytes() < count * sizeof(float)) {
      data_ = DeviceBuffer(count * sizeof(float));
      WHALE_CUDA_CHECK(cudaMemset(data_.get(), 0, data_.bytes()));
    }
    return data_.floats();
  }
  std::string transport() const override { return "nccl"; }
  std::string link_kind() const override { return kind_; }
  bool single_host() const override { return placement_.single_host; }

 private:
  RankPlacement placement_;
  std::string kind_;
  std::unique_ptr<Communicator> comm_;
  DeviceBuffer data_;
};

}  // namespace

std::unique_ptr<LinkEndpoint> make_nccl_link_endpoint(int index,
                                                     const RankPlacement& placement) {
  const int count = require_cuda_devices("--device");
  return std::make_unique<NcclLinkEndpoint>(index, placement, count);
}

}  // namespace whale::exec

// File: profile_nccl_endpoint.cpp
// NcclCommunicator: the Communicator over NCCL for device memory, bootstrapped through MPI
// (the unique id is broadcast over an MPI communicator of the same ranks); every call
// synchronizes its stream before returning. NcclLinkEndpoint: its buffer for the link sweep.
#include <mpi.h>

#include "profile/cuda/profile_cuda_buffer.h"
#include "backend/cuda/cuda_check.h"
#include "profile/cuda/profile_cuda_factory.h"
#include "whale/exec/comm/mpi_communicator.h"

namespace whale::exec {
namespace {

class NcclCommunicator : public Communicator {
 public:
  /// Takes ownership of `mpi` (a communicator of exactly the member ranks) and uses `device`.
  NcclCommunicator(MPI_Comm mpi, int device) : mpi_(mpi), device_(device) {
    WHALE_MPI_CHECK(MPI_Comm_rank(mpi_, &rank_));
    WHALE_MPI_CHECK(MPI_Comm_size(mpi_, &size_));
    ncclUniqueId id;
    if (rank_ == 0) WHALE_NCCL_CHECK(ncclGetUniqueId(&id));
    WHALE_MPI_CHECK(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, mpi_));
    WHALE_CUDA_CHECK(cudaSetDevice(device_));
    WHALE_CUDA_CHECK(cudaStreamCreate(&stream_));
    WHALE_NCCL_CHECK(ncclCommInitRank(&nccl_, size_, id, rank_));
  }
  ~NcclCommunicator() override {
    if (nccl_ != nullptr) ncclCommDestroy(nccl_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&mpi_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void all_reduce_sum(float* data, std::size_t count) override {
    WHALE_NCCL_CHECK(ncclAllReduce(data, data, count, ncclFloat, ncclSum, nccl_, stream_));
    synchronize();
  }
  void reduce_scatter_sum(const float* input, float* output,
                          std::size_t count_per_rank) override {
    WHALE_NCCL_CHECK(
        ncclReduceScatter(input, output, count_per_rank, ncclFloat, ncclSum, nccl_, stream_));
    synchronize();
  }
  void all_gather(const float* input, float* output, std::size_t count_per_rank) override {
    WHALE_NCCL_CHECK(ncclAllGather(input, output, count_per_rank, ncclFloat, nccl_, stream_));
    synchronize();
  }
  /// NCCL point-to-point has no tags: messages to one peer match in issue order.
  void send(const float* data, std::size_t count, int peer, int /*tag*/) override {
    WHALE_NCCL_CHECK(ncclSend(data, count, ncclFloat, peer, nccl_, stream_));
    synchronize();
  }
  void recv(float* data, std::size_t count, int peer, int /*tag*/) override {
    WHALE_NCCL_CHECK(ncclRecv(data, count, ncclFloat, peer, nccl_, stream_));
    synchronize();
  }
  std::unique_ptr<Communicator> subgroup(const std::vector<int>& members) override {
    MPI_Group all = MPI_GROUP_NULL, some = MPI_GROUP_NULL;
    MPI_Comm sub = MPI_COMM_NULL;
    WHALE_MPI_CHECK(MPI_Comm_group(mpi_, &all));
    WHALE_MPI_CHECK(
        MPI_Group_incl(all, static_cast<int>(members.size()), members.data(), &some));
    WHALE_MPI_CHECK(MPI_Comm_create_group(mpi_, some, 0, &sub));
    WHALE_MPI_CHECK(MPI_Group_free(&some));
    WHALE_MPI_CHECK(MPI_Group_free(&all));
    return std::make_unique<NcclCommunicator>(sub, device_);
  }

 private:
  void synchronize() { WHALE_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

  MPI_Comm mpi_;
  int device_;
  int rank_ = 0, size_ = 0;
  cudaStream_t stream_ = nullptr;
  ncclComm_t nccl_ = nullptr;
};

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
    comm_ = std::make_unique<NcclCommunicator>(world, device);
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
  std::unique_ptr<NcclCommunicator> comm_;
  DeviceBuffer data_;
};

}  // namespace

std::unique_ptr<LinkEndpoint> make_nccl_link_endpoint(int index,
                                                     const RankPlacement& placement) {
  const int count = require_cuda_devices("--device");
  return std::make_unique<NcclLinkEndpoint>(index, placement, count);
}

}  // namespace whale::exec

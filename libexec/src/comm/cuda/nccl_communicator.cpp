// File: nccl_communicator.cpp
// NcclCommunicator: Communicator over NCCL for device memory, bootstrapped through MPI (the
// unique id is broadcast over an MPI communicator of the same ranks); every call
// synchronizes its stream before returning.
#include "whale/exec/comm/nccl_communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include "backend/cuda/cuda_check.h"
#include "whale/exec/comm/mpi_communicator.h"

namespace whale::exec {
namespace {

/// The NCCL collectives queued on `stream` so far: complete once the stream has drained.
class StreamRequest : public CommRequest {
 public:
  explicit StreamRequest(cudaStream_t stream) : stream_(stream) {}
  bool test() override {
    const cudaError_t status = cudaStreamQuery(stream_);
    if (status == cudaErrorNotReady) return false;
    WHALE_CUDA_CHECK(status);
    return true;
  }
  void wait() override { WHALE_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

 private:
  cudaStream_t stream_;
};

class NcclCommunicator : public Communicator {
 public:
  /// Takes ownership of `mpi` (a communicator of exactly the member ranks) and uses `gpu`.
  NcclCommunicator(MPI_Comm mpi, int gpu) : mpi_(mpi), gpu_(gpu) {
    WHALE_MPI_CHECK(MPI_Comm_rank(mpi_, &rank_));
    WHALE_MPI_CHECK(MPI_Comm_size(mpi_, &size_));
    ncclUniqueId id;
    if (rank_ == 0) WHALE_NCCL_CHECK(ncclGetUniqueId(&id));
    WHALE_MPI_CHECK(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, mpi_));
    WHALE_CUDA_CHECK(cudaSetDevice(gpu_));
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
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void all_reduce_sum(float* data, std::size_t count) override {
    WHALE_NCCL_CHECK(ncclAllReduce(data, data, count, ncclFloat, ncclSum, nccl_, stream_));
    synchronize();
  }
  std::unique_ptr<CommRequest> start_all_reduce_sum(float* data, std::size_t count) override {
    WHALE_NCCL_CHECK(ncclAllReduce(data, data, count, ncclFloat, ncclSum, nccl_, stream_));
    return std::make_unique<StreamRequest>(stream_);
  }
  /// ncclReduceScatter takes equal blocks only: one ncclReduce in place per block, rooted at
  /// the block's owner, grouped into one launch.
  std::unique_ptr<CommRequest> start_reduce_scatter_sum(
      float* data, const std::vector<std::size_t>& counts) override {
    block_offset(counts, rank_, size_);  // checks one count per member
    WHALE_NCCL_CHECK(ncclGroupStart());
    std::size_t offset = 0;
    for (int root = 0; root < size_; ++root) {
      float* block = data + offset;
      if (counts[root] > 0)
        WHALE_NCCL_CHECK(ncclReduce(block, block, counts[root], ncclFloat, ncclSum, root, nccl_,
                                    stream_));
      offset += counts[root];
    }
    WHALE_NCCL_CHECK(ncclGroupEnd());
    return std::make_unique<StreamRequest>(stream_);
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
  void send(const float* data, std::size_t count, int peer, int /*tag*/) override {
    WHALE_NCCL_CHECK(ncclSend(data, count, ncclFloat, peer, nccl_, stream_));
    synchronize();
  }
  void recv(float* data, std::size_t count, int peer, int /*tag*/) override {
    WHALE_NCCL_CHECK(ncclRecv(data, count, ncclFloat, peer, nccl_, stream_));
    synchronize();
  }
  std::unique_ptr<Communicator> subgroup(const std::vector<int>& members) override {
    return std::make_unique<NcclCommunicator>(create_mpi_subgroup(mpi_, members), gpu_);
  }

 private:
  void synchronize() { WHALE_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

  MPI_Comm mpi_;
  int gpu_;
  int rank_ = 0, size_ = 0;
  cudaStream_t stream_ = nullptr;
  ncclComm_t nccl_ = nullptr;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(MPI_Comm members, int gpu) {
  return std::make_unique<NcclCommunicator>(members, gpu);
}

}  // namespace whale::exec

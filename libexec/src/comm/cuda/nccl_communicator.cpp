// File: nccl_communicator.cpp
// NcclCommunicator: Communicator over NCCL for device memory, bootstrapped through MPI (the
// unique id is broadcast over an MPI communicator of the same ranks). Collectives run on the
// communicator's own stream, ordered after the rank's compute stream and back by CUDA events:
// no host synchronisation per collective when a compute stream is given.
#include "whale/exec/comm/nccl_communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include "backend/cuda/cuda_check.h"
#include "whale/exec/comm/mpi_communicator.h"

namespace whale::exec {
namespace {

/// A collective in flight on the NCCL stream, marked by an event recorded after it.
class EventRequest : public CommRequest {
 public:
  /// `done` is recorded after the collective; with a compute stream, that stream already waits
  /// for it, so wait() need not block the host.
  EventRequest(cudaEvent_t done, bool compute_waits) : done_(done), compute_waits_(compute_waits) {}
  ~EventRequest() override { cudaEventDestroy(done_); }  // released once the event completes
  EventRequest(const EventRequest&) = delete;
  EventRequest& operator=(const EventRequest&) = delete;

  bool test() override {
    const cudaError_t status = cudaEventQuery(done_);
    if (status == cudaErrorNotReady) return false;
    WHALE_CUDA_CHECK(status);
    return true;
  }
  void wait() override {
    if (!compute_waits_) WHALE_CUDA_CHECK(cudaEventSynchronize(done_));
  }

 private:
  cudaEvent_t done_;
  bool compute_waits_;
};

cudaEvent_t new_event() {
  cudaEvent_t event = nullptr;
  WHALE_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  return event;
}

class NcclCommunicator : public Communicator {
 public:
  /// Takes ownership of `mpi` (a communicator of exactly the member ranks) and uses `gpu`;
  /// orders itself after `compute` (may be null).
  NcclCommunicator(MPI_Comm mpi, int gpu, cudaStream_t compute)
      : mpi_(mpi), gpu_(gpu), compute_(compute) {
    WHALE_MPI_CHECK(MPI_Comm_rank(mpi_, &rank_));
    WHALE_MPI_CHECK(MPI_Comm_size(mpi_, &size_));
    ncclUniqueId id;
    if (rank_ == 0) WHALE_NCCL_CHECK(ncclGetUniqueId(&id));
    WHALE_MPI_CHECK(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, mpi_));
    WHALE_CUDA_CHECK(cudaSetDevice(gpu_));
    WHALE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    ready_ = new_event();
    WHALE_NCCL_CHECK(ncclCommInitRank(&nccl_, size_, id, rank_));
  }
  ~NcclCommunicator() override {
    if (stream_ != nullptr) cudaStreamSynchronize(stream_);  // no throw from a destructor
    if (nccl_ != nullptr) ncclCommDestroy(nccl_);
    if (ready_ != nullptr) cudaEventDestroy(ready_);
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
    finish(issue([&] {
      WHALE_NCCL_CHECK(ncclAllReduce(data, data, count, ncclFloat, ncclSum, nccl_, stream_));
    }));
  }
  std::unique_ptr<CommRequest> start_all_reduce_sum(float* data, std::size_t count) override {
    return request(issue([&] {
      WHALE_NCCL_CHECK(ncclAllReduce(data, data, count, ncclFloat, ncclSum, nccl_, stream_));
    }));
  }
  /// ncclReduceScatter takes equal blocks only: one ncclReduce in place per block, rooted at
  /// the block's owner, grouped into one launch.
  std::unique_ptr<CommRequest> start_reduce_scatter_sum(
      float* data, const std::vector<std::size_t>& counts) override {
    block_offset(counts, rank_, size_);  // checks one count per member
    return request(issue([&] {
      WHALE_NCCL_CHECK(ncclGroupStart());
      std::size_t offset = 0;
      for (int root = 0; root < size_; ++root) {
        float* block = data + offset;
        if (counts[root] > 0)
          WHALE_NCCL_CHECK(ncclReduce(block, block, counts[root], ncclFloat, ncclSum, root,
                                      nccl_, stream_));
        offset += counts[root];
      }
      WHALE_NCCL_CHECK(ncclGroupEnd());
    }));
  }
  void reduce_scatter_sum(const float* input, float* output,
                          std::size_t count_per_rank) override {
    finish(issue([&] {
      WHALE_NCCL_CHECK(ncclReduceScatter(input, output, count_per_rank, ncclFloat, ncclSum,
                                         nccl_, stream_));
    }));
  }
  void all_gather(const float* input, float* output, std::size_t count_per_rank) override {
    finish(issue([&] {
      WHALE_NCCL_CHECK(ncclAllGather(input, output, count_per_rank, ncclFloat, nccl_, stream_));
    }));
  }
  void send(const float* data, std::size_t count, int peer, int /*tag*/) override {
    finish(issue([&] { WHALE_NCCL_CHECK(ncclSend(data, count, ncclFloat, peer, nccl_, stream_)); }));
  }
  void recv(float* data, std::size_t count, int peer, int /*tag*/) override {
    finish(issue([&] { WHALE_NCCL_CHECK(ncclRecv(data, count, ncclFloat, peer, nccl_, stream_)); }));
  }
  std::unique_ptr<Communicator> subgroup(const std::vector<int>& members) override {
    return std::make_unique<NcclCommunicator>(create_mpi_subgroup(mpi_, members), gpu_,
                                              compute_);
  }

 private:
  /// Enqueues `nccl_calls` on the NCCL stream after the compute stream's work so far, and makes
  /// the compute stream's later work wait for them; returns the event recorded after them.
  template <class Calls>
  cudaEvent_t issue(Calls nccl_calls) {
    WHALE_CUDA_CHECK(cudaSetDevice(gpu_));
    if (compute_ != nullptr) {
      WHALE_CUDA_CHECK(cudaEventRecord(ready_, compute_));
      WHALE_CUDA_CHECK(cudaStreamWaitEvent(stream_, ready_, 0));
    }
    nccl_calls();
    cudaEvent_t done = new_event();
    WHALE_CUDA_CHECK(cudaEventRecord(done, stream_));
    if (compute_ != nullptr) WHALE_CUDA_CHECK(cudaStreamWaitEvent(compute_, done, 0));
    return done;
  }
  std::unique_ptr<CommRequest> request(cudaEvent_t done) {
    return std::make_unique<EventRequest>(done, compute_ != nullptr);
  }
  /// A blocking call is complete for the compute stream once issued; without one, the host
  /// waits for it.
  void finish(cudaEvent_t done) { request(done)->wait(); }

  MPI_Comm mpi_;
  int gpu_;
  cudaStream_t compute_;  // the rank's compute stream, or null
  int rank_ = 0, size_ = 0;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t ready_ = nullptr;  // the compute stream's point each collective starts after
  ncclComm_t nccl_ = nullptr;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(MPI_Comm members, int gpu,
                                                     void* compute_stream) {
  return std::make_unique<NcclCommunicator>(members, gpu,
                                            static_cast<cudaStream_t>(compute_stream));
}

}  // namespace whale::exec

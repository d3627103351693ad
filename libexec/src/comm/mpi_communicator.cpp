// File: mpi_communicator.cpp
// MpiCommunicator: Communicator over an MPI communicator. Blocking sums are reduced in rank
// order in double by the rank that owns each chunk (all-to-all, sum, all-gather), so every
// member gets bit-identical results, independent of MPI's reduction algorithm. The
// non-blocking all-reduce is MPI_Iallreduce: one collective, started in program order (a
// two-step all-to-all then all-gather would start its second step whenever the first one
// completes, in an order that differs between ranks), summed in float by MPI's algorithm.
// Every buffer is checked to be host memory (pointer_location.h) before MPI sees it.
#include <climits>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm/mpi_request.h"
#include "comm/pointer_location.h"
#include "whale/exec/comm/mpi_communicator.h"
#include "whale/plan/check.h"

namespace whale::exec {
namespace {

int to_mpi_count(std::size_t count) {
  if (count > static_cast<std::size_t>(INT_MAX))
    throw std::length_error("MPI message of " + std::to_string(count) +
                            " floats exceeds INT_MAX");
  return static_cast<int>(count);
}

/// out[j] = sum over r of blocks[r*n + j], in rank order, accumulated in double.
void sum_blocks(const float* blocks, int ranks, std::size_t n, float* out) {
  for (std::size_t j = 0; j < n; ++j) {
    double sum = 0.0;
    for (int r = 0; r < ranks; ++r) sum += blocks[static_cast<std::size_t>(r) * n + j];
    out[j] = static_cast<float>(sum);
  }
}

class MpiCommunicator : public Communicator {
 public:
  explicit MpiCommunicator(MPI_Comm owned) : comm_(owned) {
    WHALE_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
    WHALE_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
    WHALE_MPI_CHECK(MPI_Comm_size(comm_, &size_));
  }
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void all_reduce_sum(float* data, std::size_t count) override {
    check_host_pointer(data, "MpiCommunicator::all_reduce_sum");
    if (size_ == 1 || count == 0) return;
    // Chunk r = [offset[r], offset[r+1]) is summed by rank r.
    std::vector<int> offsets(size_ + 1), lengths(size_);
    for (int r = 0; r <= size_; ++r)
      offsets[r] = to_mpi_count(count * static_cast<std::size_t>(r) / size_);
    for (int r = 0; r < size_; ++r) lengths[r] = offsets[r + 1] - offsets[r];
    const std::size_t mine = lengths[rank_];
    float* blocks = scratch(blocks_, mine * size_);
    std::vector<int> recv_counts(size_, static_cast<int>(mine)), recv_offsets(size_);
    for (int r = 0; r < size_; ++r) recv_offsets[r] = static_cast<int>(mine) * r;
    WHALE_MPI_CHECK(MPI_Alltoallv(data, lengths.data(), offsets.data(), MPI_FLOAT,
                                  blocks, recv_counts.data(), recv_offsets.data(),
                                  MPI_FLOAT, comm_));
    float* reduced = scratch(reduced_, mine);
    sum_blocks(blocks, size_, mine, reduced);
    WHALE_MPI_CHECK(MPI_Allgatherv(reduced, static_cast<int>(mine), MPI_FLOAT, data,
                                   lengths.data(), offsets.data(), MPI_FLOAT, comm_));
  }

  /// MPI_Iallreduce in place. Open MPI's algorithms (libnbc: binomial reduce and broadcast,
  /// or ring reduce-scatter and all-gather) reduce each element once and hand the same bits to
  /// every member, so replicas stay identical.
  std::unique_ptr<CommRequest> start_all_reduce_sum(float* data, std::size_t count) override {
    check_host_pointer(data, "MpiCommunicator::start_all_reduce_sum");
    if (size_ == 1 || count == 0) return std::make_unique<MpiRequest>(MPI_REQUEST_NULL);
    MPI_Request request = MPI_REQUEST_NULL;
    WHALE_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, data, to_mpi_count(count), MPI_FLOAT, MPI_SUM,
                                   comm_, &request));
    return std::make_unique<MpiRequest>(request);
  }

  /// MPI_Ireduce_scatter into a block buffer of the request, copied into place on completion.
  std::unique_ptr<CommRequest> start_reduce_scatter_sum(
      float* data, const std::vector<std::size_t>& counts) override {
    check_host_pointer(data, "MpiCommunicator::start_reduce_scatter_sum");
    const std::size_t offset = block_offset(counts, rank_, size_);
    const std::size_t mine = counts.at(rank_);
    if (size_ == 1) return std::make_unique<MpiRequest>(MPI_REQUEST_NULL);
    std::vector<int> mpi_counts;
    for (std::size_t c : counts) mpi_counts.push_back(to_mpi_count(c));
    return std::make_unique<MpiBlockRequest>(
        std::move(mpi_counts), mine, data + offset, [&](float* block, const int* recv_counts) {
          MPI_Request request = MPI_REQUEST_NULL;
          WHALE_MPI_CHECK(MPI_Ireduce_scatter(data, block, recv_counts, MPI_FLOAT, MPI_SUM,
                                              comm_, &request));
          return request;
        });
  }

  void reduce_scatter_sum(const float* input, float* output,
                          std::size_t count_per_rank) override {
    check_host_pointer(input, "MpiCommunicator::reduce_scatter_sum");
    check_host_pointer(output, "MpiCommunicator::reduce_scatter_sum");
    const int n = to_mpi_count(count_per_rank);
    float* blocks = scratch(blocks_, count_per_rank * size_);
    WHALE_MPI_CHECK(MPI_Alltoall(input, n, MPI_FLOAT, blocks, n, MPI_FLOAT, comm_));
    sum_blocks(blocks, size_, count_per_rank, output);
  }

  void all_gather(const float* input, float* output, std::size_t count_per_rank) override {
    check_host_pointer(input, "MpiCommunicator::all_gather");
    check_host_pointer(output, "MpiCommunicator::all_gather");
    const int n = to_mpi_count(count_per_rank);
    const bool in_place = input == output + static_cast<std::size_t>(rank_) * count_per_rank;
    WHALE_MPI_CHECK(MPI_Allgather(in_place ? MPI_IN_PLACE : input, n, MPI_FLOAT, output, n,
                                  MPI_FLOAT, comm_));
  }

  void send(const float* data, std::size_t count, int peer, int tag) override {
    check_host_pointer(data, "MpiCommunicator::send");
    WHALE_MPI_CHECK(MPI_Send(data, to_mpi_count(count), MPI_FLOAT, peer, tag, comm_));
  }

  void recv(float* data, std::size_t count, int peer, int tag) override {
    check_host_pointer(data, "MpiCommunicator::recv");
    MPI_Status status;
    WHALE_MPI_CHECK(MPI_Recv(data, to_mpi_count(count), MPI_FLOAT, peer, tag, comm_, &status));
    int received = 0;
    WHALE_MPI_CHECK(MPI_Get_count(&status, MPI_FLOAT, &received));
    if (received != static_cast<int>(count))
      throw std::runtime_error("MpiCommunicator::recv: expected " + std::to_string(count) +
                               " floats from rank " + std::to_string(peer) + " (tag " +
                               std::to_string(tag) + "), got " + std::to_string(received));
  }

  std::unique_ptr<Communicator> subgroup(const std::vector<int>& members) override {
    return std::make_unique<MpiCommunicator>(create_mpi_subgroup(comm_, members));
  }

 private:
  /// `buffer` grown to at least `count` floats (never shrunk), so that collectives of the same
  /// size every step reuse warm memory instead of faulting in fresh pages.
  static float* scratch(std::vector<float>& buffer, std::size_t count) {
    if (buffer.size() < count) buffer.resize(count);
    return buffer.data();
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  std::vector<float> blocks_;   // received blocks of the collective in flight
  std::vector<float> reduced_;  // this rank's summed chunk (all-reduce)
};

}  // namespace

MPI_Comm create_mpi_subgroup(MPI_Comm parent, const std::vector<int>& members) {
  int size = 0;
  WHALE_MPI_CHECK(MPI_Comm_size(parent, &size));
  for (int m : members)
    WHALE_CHECK(m >= 0 && m < size, "create_mpi_subgroup: member " + std::to_string(m) +
                                        " outside 0.." + std::to_string(size - 1));
  MPI_Group all = MPI_GROUP_NULL, group = MPI_GROUP_NULL;
  WHALE_MPI_CHECK(MPI_Comm_group(parent, &all));
  WHALE_MPI_CHECK(
      MPI_Group_incl(all, static_cast<int>(members.size()), members.data(), &group));
  MPI_Comm created = MPI_COMM_NULL;
  WHALE_MPI_CHECK(MPI_Comm_create_group(parent, group, /*tag=*/0, &created));
  WHALE_MPI_CHECK(MPI_Group_free(&group));
  WHALE_MPI_CHECK(MPI_Group_free(&all));
  WHALE_CHECK(created != MPI_COMM_NULL, std::string("create_mpi_subgroup: called by a non-member"));
  WHALE_MPI_CHECK(MPI_Comm_set_errhandler(created, MPI_ERRORS_RETURN));
  return created;
}

std::unique_ptr<Communicator> make_mpi_communicator(MPI_Comm comm) {
  MPI_Comm duplicate = MPI_COMM_NULL;
  WHALE_MPI_CHECK(MPI_Comm_dup(comm, &duplicate));
  return std::make_unique<MpiCommunicator>(duplicate);
}

std::unique_ptr<Communicator> world_communicator() {
  return make_mpi_communicator(MPI_COMM_WORLD);
}

}  // namespace whale::exec

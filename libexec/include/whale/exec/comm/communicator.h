// File: communicator.h
// Communicator: collectives and point-to-point among a fixed group of ranks. MPI implements
// it for CPU tensors (and bootstrap), NCCL for GPU tensors (comm/cuda), and the host bridge
// where GPU and CPU ranks meet (host_bridge_communicator.h).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace whale::exec {

/// A non-blocking collective in flight, from Communicator::start_all_reduce_sum or
/// start_reduce_scatter_sum. Its buffer belongs to the collective until it completes: nothing
/// may read or write it before then.
/// The communicator that started it must outlive it; destroying it before it completes waits.
class CommRequest {
 public:
  virtual ~CommRequest() = default;
  /// Advances the collective without blocking (MPI progress); true once it is complete, after
  /// which the buffer holds the result.
  virtual bool test() = 0;
  /// Blocks until the collective is complete.
  virtual void wait() = 0;
};

/// Memory: a communicator made for a rank's groups (rank_communicators.h) takes pointers to
/// that rank's backend memory: device memory on a GPU rank (NCCL, or the host bridge's
/// staging), host memory on a CPU rank (MPI; MPI never gets a device pointer). Order: each call
/// starts after the work issued so far on the rank's compute stream, and "complete" means
/// complete for the work issued on that stream afterwards (on the CPU, where every call runs at
/// once, that is plain completion); callers need no synchronisation of their own around it.
class Communicator {
 public:
  virtual ~Communicator() = default;
  /// This process's rank within the communicator, 0..size()-1.
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// In-place element-wise sum over all members. Every member calls it with the same count.
  virtual void all_reduce_sum(float* data, std::size_t count) = 0;
  /// all_reduce_sum without blocking: starts it and returns its request; once complete, `data`
  /// holds what all_reduce_sum would have left there. Several may be in flight at once. Every
  /// member starts this communicator's collectives, blocking or not, in the same order.
  virtual std::unique_ptr<CommRequest> start_all_reduce_sum(float* data, std::size_t count) = 0;
  /// In place and without blocking, the reduce-scatter of blocks of any sizes (ZeRO-2's
  /// gradient buckets): `data` holds counts[0] + ... + counts[size()-1] floats, block r being
  /// the counts[r] floats after blocks 0..r-1 (a count may be 0). Once the request is complete,
  /// this rank's block holds the element-wise sum over all members of that block; what the
  /// other blocks hold is unspecified. Every member passes the same counts, and starts this
  /// communicator's collectives in the same order (as start_all_reduce_sum).
  virtual std::unique_ptr<CommRequest> start_reduce_scatter_sum(
      float* data, const std::vector<std::size_t>& counts) = 0;
  /// input holds size()*count_per_rank floats; output gets this rank's block of the sum.
  virtual void reduce_scatter_sum(const float* input, float* output,
                                  std::size_t count_per_rank) = 0;
  /// Gathers count_per_rank floats from every member into output (size()*count_per_rank),
  /// in rank order. In place when input is output + rank() * count_per_rank (this rank's
  /// block already in its place, as NCCL's in-place all-gather and MPI_IN_PLACE take it);
  /// input and output overlap in no other way.
  virtual void all_gather(const float* input, float* output, std::size_t count_per_rank) = 0;
  /// Blocking send to `peer` (a rank of this communicator); returns once `data` may be reused.
  virtual void send(const float* data, std::size_t count, int peer, int tag) = 0;
  /// Blocking receive of exactly `count` floats from `peer` with `tag`.
  virtual void recv(float* data, std::size_t count, int peer, int tag) = 0;
  /// A communicator over `members` (ranks of this communicator; new rank i = members[i]).
  /// Called only by the members themselves.
  virtual std::unique_ptr<Communicator> subgroup(const std::vector<int>& members) = 0;
};

/// Where block `rank` of start_reduce_scatter_sum's `counts` begins: the sum of the counts
/// before it. Throws whale::InternalError unless counts has one entry per member (`members`).
std::size_t block_offset(const std::vector<std::size_t>& counts, int rank, int members);

}  // namespace whale::exec

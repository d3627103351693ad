// File: run_transport.h
// PeerTransport: what the executor needs between world ranks besides group collectives:
// non-blocking sends (so that no schedule can deadlock on two ranks sending to each other),
// matching receives, a double-precision sum, a barrier and a gather of bytes to rank 0.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace whale::exec {

class PeerTransport {
 public:
  virtual ~PeerTransport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Starts sending a copy of data[0..count) to world rank `peer` and returns at once.
  virtual void post_send(const float* data, std::size_t count, int peer, int tag) = 0;
  /// Blocks until exactly `count` floats with `tag` arrive from `peer`; throws
  /// std::runtime_error on a length mismatch.
  virtual void recv(float* data, std::size_t count, int peer, int tag) = 0;
  /// Blocks until every posted send has completed and frees their copies.
  virtual void wait_sends() = 0;
  /// Element-wise sum of `values` over all ranks (in place), identical on every rank.
  virtual void sum(std::vector<double>& values) = 0;
  virtual void barrier() = 0;
  /// Rank 0 gets every rank's bytes in rank order; other ranks get an empty vector.
  virtual std::vector<std::string> gather_to_root(const std::string& bytes) = 0;
};

/// The MPI implementation over a duplicate of MPI_COMM_WORLD (MPI must be initialised).
std::unique_ptr<PeerTransport> make_mpi_transport();

}  // namespace whale::exec

// File: mpi_request.h
// Private to comm/: MpiRequest, the CommRequest of one non-blocking MPI call, and
// MpiBlockRequest, one whose result block is copied into place once it completes.
#pragma once

#include <mpi.h>

#include <vector>

#include "whale/exec/comm/communicator.h"

namespace whale::exec {

/// Owns an MPI_Request. MPI_REQUEST_NULL stands for a request that is already complete, and
/// needs no MPI (a one-rank collective).
class MpiRequest : public CommRequest {
 public:
  explicit MpiRequest(MPI_Request request) : request_(request) {}
  /// Waits for an incomplete request, so that MPI never keeps a buffer its owner freed.
  ~MpiRequest() override;
  MpiRequest(const MpiRequest&) = delete;
  MpiRequest& operator=(const MpiRequest&) = delete;

  bool test() override;
  void wait() override;

 private:
  MPI_Request request_;
};

/// A non-blocking MPI collective that receives this rank's block into a buffer of its own
/// (`block`) and, on completion (test() or wait()), copies it to `target`. It keeps the count
/// arrays MPI reads until completion (`counts`).
class MpiBlockRequest : public CommRequest {
 public:
  /// `start` is called once with the receive buffer (block.size() floats) and the counts, and
  /// returns the MPI request it started.
  template <class Start>
  MpiBlockRequest(std::vector<int> counts, std::size_t block_count, float* target, Start start)
      : counts_(std::move(counts)), block_(block_count), target_(target),
        request_(start(block_.data(), counts_.data())) {}

  bool test() override;
  void wait() override;

 private:
  void copy_into_place();

  // Declared before request_, so that the request (which waits) is destroyed first.
  std::vector<int> counts_;
  std::vector<float> block_;
  float* target_;
  MpiRequest request_;
  bool copied_ = false;
};

}  // namespace whale::exec

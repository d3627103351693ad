// File: mpi_request.h
// Private to comm/: MpiRequest, the CommRequest of one non-blocking MPI call.
#pragma once

#include <mpi.h>

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

}  // namespace whale::exec

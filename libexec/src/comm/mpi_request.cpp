// File: mpi_request.cpp
// MpiRequest: MPI_Test and MPI_Wait behind CommRequest; MpiBlockRequest: the same, then a copy.
#include "comm/mpi_request.h"

#include <algorithm>

#include "whale/exec/comm/mpi_communicator.h"

namespace whale::exec {

MpiRequest::~MpiRequest() {
  if (request_ == MPI_REQUEST_NULL) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Wait(&request_, MPI_STATUS_IGNORE);
}

bool MpiRequest::test() {
  if (request_ == MPI_REQUEST_NULL) return true;
  int complete = 0;
  WHALE_MPI_CHECK(MPI_Test(&request_, &complete, MPI_STATUS_IGNORE));  // nulls it when complete
  return complete != 0;
}

void MpiRequest::wait() {
  if (request_ == MPI_REQUEST_NULL) return;
  WHALE_MPI_CHECK(MPI_Wait(&request_, MPI_STATUS_IGNORE));
}

bool MpiBlockRequest::test() {
  if (!copied_ && request_.test()) copy_into_place();
  return copied_;
}

void MpiBlockRequest::wait() {
  if (copied_) return;
  request_.wait();
  copy_into_place();
}

void MpiBlockRequest::copy_into_place() {
  std::copy(block_.begin(), block_.end(), target_);
  copied_ = true;
}

}  // namespace whale::exec

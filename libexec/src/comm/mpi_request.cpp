// File: mpi_request.cpp
// MpiRequest: MPI_Test and MPI_Wait behind CommRequest.
#include "comm/mpi_request.h"

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

}  // namespace whale::exec

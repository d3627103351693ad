// File: mpi_self_communicator.cpp
// SelfCommunicator: the one-rank Communicator (collectives are copies), usable without MPI.
#include <algorithm>
#include <stdexcept>

#include "comm/mpi_request.h"
#include "whale/exec/comm/mpi_communicator.h"
#include "whale/plan/check.h"

namespace whale::exec {

void SelfCommunicator::all_reduce_sum(float*, std::size_t) {}

std::unique_ptr<CommRequest> SelfCommunicator::start_all_reduce_sum(float*, std::size_t) {
  return std::make_unique<MpiRequest>(MPI_REQUEST_NULL);
}

std::unique_ptr<CommRequest> SelfCommunicator::start_reduce_scatter_sum(
    float*, const std::vector<std::size_t>& counts) {
  block_offset(counts, 0, 1);  // checks that there is one block
  return std::make_unique<MpiRequest>(MPI_REQUEST_NULL);
}

void SelfCommunicator::reduce_scatter_sum(const float* input, float* output,
                                          std::size_t count_per_rank) {
  std::copy(input, input + count_per_rank, output);
}

void SelfCommunicator::all_gather(const float* input, float* output,
                                  std::size_t count_per_rank) {
  if (input != output) std::copy(input, input + count_per_rank, output);  // else in place
}

void SelfCommunicator::send(const float*, std::size_t, int peer, int) {
  check_failed(__FILE__, __LINE__, "peer exists",
               "SelfCommunicator::send: no peer " + std::to_string(peer) +
                   " in a communicator of one rank");
}

void SelfCommunicator::recv(float*, std::size_t, int peer, int) {
  check_failed(__FILE__, __LINE__, "peer exists",
               "SelfCommunicator::recv: no peer " + std::to_string(peer) +
                   " in a communicator of one rank");
}

std::unique_ptr<Communicator> SelfCommunicator::subgroup(const std::vector<int>& members) {
  WHALE_CHECK(members.size() == 1 && members[0] == 0,
              std::string("SelfCommunicator::subgroup: members must be {0}"));
  return std::make_unique<SelfCommunicator>();
}

}  // namespace whale::exec

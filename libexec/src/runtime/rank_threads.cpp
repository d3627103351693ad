// File: rank_threads.cpp
// default_rank_threads: affinity cores / ranks of this node (MPI shared-memory split).
#include "whale/exec/runtime/rank_threads.h"

#include <sched.h>

#include <algorithm>

#include "whale/exec/comm/mpi_communicator.h"

namespace whale::exec {

int default_rank_threads() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  const int cores = sched_getaffinity(0, sizeof(mask), &mask) == 0 ? CPU_COUNT(&mask) : 1;
  MPI_Comm node = MPI_COMM_NULL;
  WHALE_MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL,
                                      &node));
  int ranks_on_node = 1;
  WHALE_MPI_CHECK(MPI_Comm_size(node, &ranks_on_node));
  WHALE_MPI_CHECK(MPI_Comm_free(&node));
  return std::max(1, cores / std::max(1, ranks_on_node));
}

}  // namespace whale::exec

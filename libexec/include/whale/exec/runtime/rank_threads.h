// File: rank_threads.h
// The default CPU thread count of a rank: the cores this process may run on, divided among the
// ranks that share its node.
#pragma once

namespace whale::exec {

/// Collective over MPI_COMM_WORLD (MPI must be initialised): max(1, cores / ranks on this
/// node), where cores is the size of this process's CPU affinity mask and the ranks on the node
/// are those of MPI_Comm_split_type(MPI_COMM_TYPE_SHARED).
int default_rank_threads();

}  // namespace whale::exec

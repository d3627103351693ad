// File: mpi_communicator.h
// The MPI implementation of Communicator (CPU tensors, bootstrap), the MPI session that owns
// MPI_Init/MPI_Finalize, and SelfCommunicator for a single rank without MPI.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "whale/exec/comm/communicator.h"

namespace whale::exec {

/// Throws std::runtime_error "MPI call CALL failed at FILE:LINE: MPI's error string".
[[noreturn]] void mpi_check_failed(int code, const char* call, const char* file, int line);

/// Checks the return code of an MPI call; names the call, the file and the line on failure.
/// Communicators made here use MPI_ERRORS_RETURN, so errors reach this check.
#define WHALE_MPI_CHECK(call)                                                   \
  do {                                                                          \
    int whale_mpi_rc_ = (call);                                                 \
    if (whale_mpi_rc_ != MPI_SUCCESS)                                           \
      ::whale::exec::mpi_check_failed(whale_mpi_rc_, #call, __FILE__, __LINE__); \
  } while (0)

/// RAII MPI: the constructor calls MPI_Init_thread (MPI_THREAD_FUNNELED) unless MPI is
/// already initialised; the destructor calls MPI_Finalize only if this session initialised
/// it and MPI is not finalised yet. At most one live session should own MPI.
class MpiSession {
 public:
  MpiSession();                       // no command line (MPI-2 allows null argc/argv)
  MpiSession(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  /// True when this session called MPI_Init_thread (and will call MPI_Finalize).
  bool owns_mpi() const { return owns_; }

 private:
  bool owns_ = false;
};

/// A Communicator over MPI_COMM_WORLD (a duplicate of it, with MPI_ERRORS_RETURN).
/// Requires MPI to be initialised (an MpiSession alive).
std::unique_ptr<Communicator> world_communicator();

/// Wraps a duplicate of `comm`; the caller keeps ownership of `comm`.
std::unique_ptr<Communicator> make_mpi_communicator(MPI_Comm comm);

/// A new MPI communicator of `members` (ranks of `parent`; new rank i = members[i]), made with
/// MPI_Comm_create_group, so only the members call it. The caller owns (frees) the result.
/// Throws std::logic_error for a member outside `parent` or a caller that is not a member.
MPI_Comm create_mpi_subgroup(MPI_Comm parent, const std::vector<int>& members);


/// Ends every process of the job (MPI_Abort on MPI_COMM_WORLD) with `code`; for failure
/// handling when a rank cannot continue. Does nothing more when MPI is not initialised.
void abort_world(int code);

/// abort_world(code) after a short pause: mpirun forwards a rank's stderr through a pipe, and
/// MPI_Abort tears the job down at once, which may drop the rank's error line still in flight.
void abort_world_after_report(int code);

/// A communicator of exactly one rank: collectives copy, send/recv to self are errors.
/// Lets single-rank runs go without MPI.
class SelfCommunicator : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void all_reduce_sum(float* data, std::size_t count) override;
  /// Already complete: the sum of one rank is its data.
  std::unique_ptr<CommRequest> start_all_reduce_sum(float* data, std::size_t count) override;
  /// Already complete: the one block is the whole data, its own sum.
  std::unique_ptr<CommRequest> start_reduce_scatter_sum(
      float* data, const std::vector<std::size_t>& counts) override;
  void reduce_scatter_sum(const float* input, float* output,
                          std::size_t count_per_rank) override;
  void all_gather(const float* input, float* output, std::size_t count_per_rank) override;
  /// Throws whale::InternalError: a single rank has no peer.
  void send(const float* data, std::size_t count, int peer, int tag) override;
  void recv(float* data, std::size_t count, int peer, int tag) override;
  /// members must be {0}; returns another SelfCommunicator.
  std::unique_ptr<Communicator> subgroup(const std::vector<int>& members) override;
};

}  // namespace whale::exec

// File: mpi_profile_lockstep_np2.cpp
// Two ranks: ProfileLockstep's steps meet one another, and a rank that finishes first answers
// the other rank's remaining steps instead of leaving it waiting (a hang fails by ctest's
// timeout).
#include <doctest/doctest.h>

#include "whale/exec/comm/mpi_communicator.h"
#include "whale/exec/profile/profile_lockstep.h"

using namespace whale::exec;

namespace {
MpiSession session;  // MPI_Init before doctest's main, MPI_Finalize after it

/// Rank r makes steps[r] steps, then finishes; returns what finish() returned on this rank.
int run_steps(const int steps[2]) {
  std::unique_ptr<Communicator> world = world_communicator();
  ProfileLockstep lockstep(*world);
  for (int i = 0; i < steps[world->rank()]; ++i) lockstep.step();
  return lockstep.finish();
}
}  // namespace

TEST_CASE("ranks making the same number of steps finish together, meeting no extra step") {
  const int steps[2] = {4, 4};
  CHECK(run_steps(steps) == 0);
}

TEST_CASE("a rank done first meets each of the other rank's remaining steps") {
  const int steps[2] = {5, 2};
  const int rank = world_communicator()->rank();
  CHECK(run_steps(steps) == (rank == 1 ? 3 : 0));
}

TEST_CASE("a rank that makes no step at all still meets the other's") {
  const int steps[2] = {0, 3};
  const int rank = world_communicator()->rank();
  CHECK(run_steps(steps) == (rank == 0 ? 3 : 0));
}

// File: mpi_nonblocking_np2.cpp
// Two ranks: Communicator::start_all_reduce_sum gives exact sums in place, with several
// all-reduces in flight at once and completed by test() or wait() in any order; a one-rank
// communicator's request is complete at once. start_reduce_scatter_sum gives each rank the
// exact sum of its block, in place, for blocks of unequal and zero size.
#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include "whale/exec/comm/mpi_communicator.h"
#include "whale/plan/check.h"

using namespace whale::exec;

namespace {
MpiSession session;  // MPI_Init before doctest's main, MPI_Finalize after it
}

TEST_CASE("start_all_reduce_sum: three buckets of one buffer in flight, each summed in place") {
  auto world = world_communicator();
  const int r = world->rank();
  // One flat buffer cut into buckets [0, 3), [3, 4), [4, 6), started in that order.
  std::vector<float> data = {1.0f + r, 2.0f, -4.0f * r, 0.25f, 100.0f + r, 1e8f * r};
  std::unique_ptr<CommRequest> b0 = world->start_all_reduce_sum(data.data(), 3);
  std::unique_ptr<CommRequest> b1 = world->start_all_reduce_sum(data.data() + 3, 1);
  std::unique_ptr<CommRequest> b2 = world->start_all_reduce_sum(data.data() + 4, 2);
  // Progress by test() until the last one completes, then wait for the others out of order.
  while (!b2->test()) {
  }
  b0->wait();
  b1->wait();
  CHECK(b0->test());  // a completed request stays complete
  CHECK(data == std::vector<float>{3.0f, 4.0f, -4.0f, 0.5f, 201.0f, 1e8f});
}

TEST_CASE("start_all_reduce_sum of nothing, and a destroyed request that was never waited for") {
  auto world = world_communicator();
  std::vector<float> data = {1.0f, 2.0f};
  CHECK(world->start_all_reduce_sum(data.data(), 0)->test());
  { auto pending = world->start_all_reduce_sum(data.data(), 2); }  // the destructor waits
  CHECK(data == std::vector<float>{2.0f, 4.0f});
}

TEST_CASE("a one-rank communicator's all-reduce is complete at once and leaves the data") {
  SelfCommunicator self;
  std::vector<float> data = {1.5f, -2.0f};
  auto request = self.start_all_reduce_sum(data.data(), data.size());
  CHECK(request->test());
  request->wait();
  CHECK(data == std::vector<float>{1.5f, -2.0f});
}

TEST_CASE("start_reduce_scatter_sum: uneven blocks of two buckets, each rank's block summed in place") {
  auto world = world_communicator();
  const int r = world->rank();
  // Bucket 0 is [0, 5) with blocks of 3 and 2 floats; bucket 1 is [5, 7), all of it rank 1's.
  std::vector<float> data = {1.0f + r, 2.0f, -4.0f * r, 0.25f, 100.0f + r, 1e8f * r, 3.0f};
  auto b0 = world->start_reduce_scatter_sum(data.data(), {3, 2});
  auto b1 = world->start_reduce_scatter_sum(data.data() + 5, {0, 2});
  while (!b1->test()) {
  }
  b0->wait();
  if (r == 0) {
    CHECK(std::vector<float>(data.begin(), data.begin() + 3) ==
          std::vector<float>{3.0f, 4.0f, -4.0f});
  } else {
    CHECK(std::vector<float>(data.begin() + 3, data.end()) ==
          std::vector<float>{0.5f, 201.0f, 1e8f, 6.0f});
  }
}

TEST_CASE("start_reduce_scatter_sum checks one count per member") {
  auto world = world_communicator();
  std::vector<float> data(3, 1.0f);
  CHECK_THROWS_AS(world->start_reduce_scatter_sum(data.data(), {3}), whale::InternalError);
  SelfCommunicator self;
  auto request = self.start_reduce_scatter_sum(data.data(), {3});
  CHECK(request->test());
  CHECK(data == std::vector<float>(3, 1.0f));
}

// File: mpi_host_bridge_np2.cpp
// Two CPU ranks standing in for a GPU stage and a CPU stage: the host-memory bridge gives the
// same exact results as MPI and stages every float once down and once up; the group factory
// builds the transports the chooser picks; the ranks' hosts and the plan's communicators.
#include <doctest/doctest.h>

#include <vector>

#include "whale/exec/comm/group_communicator.h"
#include "whale/exec/comm/host_bridge_communicator.h"
#include "whale/exec/comm/mpi_communicator.h"
#include "whale/exec/runtime/rank_devices.h"
#include "whale/exec/runtime/rank_placement.h"

using namespace whale::exec;

namespace {
MpiSession session;  // MPI_Init before doctest's main, MPI_Finalize after it

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

std::unique_ptr<Communicator> bridge_of_world() {
  return make_group_communicator(MPI_COMM_WORLD, {0, 1}, TransportKind::host_bridge, -1);
}

}  // namespace

TEST_CASE("the factory builds a host bridge for host_bridge and plain MPI for mpi") {
  auto bridge = bridge_of_world();
  CHECK(dynamic_cast<HostBridgeCommunicator*>(bridge.get()) != nullptr);
  auto mpi = make_group_communicator(MPI_COMM_WORLD, {1, 0}, TransportKind::mpi, -1);
  CHECK(dynamic_cast<HostBridgeCommunicator*>(mpi.get()) == nullptr);
  CHECK(mpi->rank() == 1 - world_rank());  // members {1, 0}: world rank 1 is rank 0
  CHECK(bridge->rank() == world_rank());
  CHECK(bridge->size() == 2);
}

TEST_CASE("activations across the bridge: send on one side, receive on the other") {
  auto comm = bridge_of_world();
  auto& bridge = dynamic_cast<HostBridgeCommunicator&>(*comm);
  std::vector<float> activation = {1.5f, -2.0f, 3.25f};
  if (bridge.rank() == 0) {
    bridge.send(activation.data(), activation.size(), 1, 7);
    std::vector<float> gradient(2);
    bridge.recv(gradient.data(), gradient.size(), 1, 8);
    CHECK(gradient == std::vector<float>{0.5f, 4.0f});
    CHECK(bridge.counts().downloaded_floats == 3);
    CHECK(bridge.counts().uploaded_floats == 2);
  } else {
    std::vector<float> received(3);
    bridge.recv(received.data(), received.size(), 0, 7);
    CHECK(received == activation);
    std::vector<float> gradient = {0.5f, 4.0f};
    bridge.send(gradient.data(), gradient.size(), 0, 8);
    CHECK(bridge.counts().downloaded_floats == 2);
    CHECK(bridge.counts().uploaded_floats == 3);
  }
}

TEST_CASE("collectives across the bridge equal MPI's, element for element") {
  auto comm = bridge_of_world();
  auto& bridge = dynamic_cast<HostBridgeCommunicator&>(*comm);
  auto mpi = make_group_communicator(MPI_COMM_WORLD, {0, 1}, TransportKind::mpi, -1);
  const float r = static_cast<float>(bridge.rank());
  std::vector<float> data = {1.0f + r, 0.5f * r, -3.0f, 1e8f * (1 - r), 7.0f};
  std::vector<float> via_mpi = data;
  bridge.all_reduce_sum(data.data(), data.size());
  mpi->all_reduce_sum(via_mpi.data(), via_mpi.size());
  CHECK(data == std::vector<float>{3.0f, 0.5f, -6.0f, 1e8f, 14.0f});
  CHECK(data == via_mpi);

  std::vector<float> input = {1.0f, 2.0f, 10.0f + r, 20.0f}, block(2);
  bridge.reduce_scatter_sum(input.data(), block.data(), 2);
  CHECK(block == (bridge.rank() == 0 ? std::vector<float>{2.0f, 4.0f}
                                     : std::vector<float>{21.0f, 40.0f}));

  std::vector<float> mine = {r, 10.0f + r}, gathered(4);
  bridge.all_gather(mine.data(), gathered.data(), 2);
  CHECK(gathered == std::vector<float>{0.0f, 10.0f, 1.0f, 11.0f});
  // Down: 5 + 4 + 2 floats; up: 5 + 2 + 4.
  CHECK(bridge.counts().downloaded_floats == 11);
  CHECK(bridge.counts().uploaded_floats == 11);
}

TEST_CASE("a non-blocking all-reduce across the bridge uploads its sum once, on completion") {
  auto comm = bridge_of_world();
  auto& bridge = dynamic_cast<HostBridgeCommunicator&>(*comm);
  const float r = static_cast<float>(bridge.rank());
  std::vector<float> data = {1.0f + r, -2.0f * r, 4.0f};
  auto request = bridge.start_all_reduce_sum(data.data(), data.size());
  CHECK(bridge.counts().downloaded_floats == 3);
  request->wait();
  CHECK(data == std::vector<float>{3.0f, -2.0f, 8.0f});
  CHECK(request->test());  // complete: test() after wait() uploads nothing more
  CHECK(bridge.counts().uploaded_floats == 3);
}

TEST_CASE("a subgroup of the bridge is a bridge with the same staging") {
  auto comm = bridge_of_world();
  auto sub = comm->subgroup({1, 0});
  CHECK(dynamic_cast<HostBridgeCommunicator*>(sub.get()) != nullptr);
  std::vector<float> data = {static_cast<float>(world_rank()) + 1.0f};
  sub->all_reduce_sum(data.data(), 1);
  CHECK(data == std::vector<float>{3.0f});
}

TEST_CASE("both ranks share one host; a CPU pipeline gets one MPI pair") {
  const std::vector<int> hosts = host_ids(gather_rank_reports(this_rank_report(false)));
  CHECK(hosts == std::vector<int>{0, 0});
  const whale::plan::Plan plan = whale::plan::load_plan("configs/plans/tiny/pp2-1f1b.yaml");
  const RankLayout layout(plan);
  const std::vector<int> gpus = assign_local_gpus(plan, layout, hosts, 0);
  CHECK(gpus == std::vector<int>{-1, -1});
  auto comms = make_plan_communicators(plan, layout, world_rank(), gpus);
  REQUIRE(comms.size() == 1);
  Communicator& pair = *comms.at({0, 1});
  CHECK(dynamic_cast<HostBridgeCommunicator*>(&pair) == nullptr);  // CPU-CPU: MPI
  std::vector<float> value = {world_rank() == 0 ? 42.0f : 0.0f};
  if (pair.rank() == 0) pair.send(value.data(), 1, 1, 0);
  else pair.recv(value.data(), 1, 0, 0);
  CHECK(value == std::vector<float>{42.0f});
}

TEST_CASE("a non-blocking reduce-scatter across the bridge uploads only this rank's block") {
  auto comm = bridge_of_world();
  auto& bridge = dynamic_cast<HostBridgeCommunicator&>(*comm);
  const float r = static_cast<float>(bridge.rank());
  // Blocks of 3 and 1 floats: rank 0 gets the sum of [0, 3), rank 1 that of [3, 4).
  std::vector<float> data = {1.0f + r, 2.0f, -r, 5.0f + r};
  auto request = bridge.start_reduce_scatter_sum(data.data(), {3, 1});
  CHECK(bridge.counts().downloaded_floats == 4);
  request->wait();
  if (bridge.rank() == 0) {
    CHECK(std::vector<float>(data.begin(), data.begin() + 3) ==
          std::vector<float>{3.0f, 4.0f, -1.0f});
    CHECK(data[3] == 5.0f);  // not this rank's block: the upload left it alone
    CHECK(bridge.counts().uploaded_floats == 3);
  } else {
    CHECK(data[3] == 11.0f);
    CHECK(std::vector<float>(data.begin(), data.begin() + 3) ==
          std::vector<float>{2.0f, 2.0f, -1.0f});
    CHECK(bridge.counts().uploaded_floats == 1);
  }
}

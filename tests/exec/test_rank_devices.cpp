// File: test_rank_devices.cpp
// The transport chooser (NCCL, MPI, host bridge by device kinds), group transports of a mixed
// GPU/CPU plan, and the local GPU of each rank with its one-rank-per-GPU error.
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>

#include "whale/exec/runtime/rank_devices.h"
#include "whale/plan/error.h"

using namespace whale::exec;

namespace {

/// Node 0: GPUs 0 and 1 (local 0, 1) and a CPU (device 2); node 1: GPU 3 (local 0).
/// Stage 0 runs on GPUs 0 and 3 (dp2), stage 1 on GPU 1 and the CPU (dp2).
whale::plan::Plan mixed_plan() {
  whale::plan::Plan plan;
  plan.source_file = "mixed.yaml";
  plan.micro_batch_size = 2;
  plan.cluster.profiles["a100"].kind = "gpu";
  plan.cluster.profiles["cpu"].kind = "cpu";
  plan.cluster.devices = {{0, 0, 0, "a100"}, {1, 0, 1, "a100"}, {2, 0, 2, "cpu"},
                          {3, 1, 0, "a100"}};
  whale::plan::Stage a;
  a.first_layer = 0;
  a.end_layer = 1;
  a.devices = {0, 3};
  a.shares = {1, 1};
  whale::plan::Stage b = a;
  b.first_layer = 1;
  b.end_layer = 2;
  b.devices = {1, 2};
  plan.stages = {a, b};
  return plan;
}

std::string error_of_assignment(const whale::plan::Plan& plan, const std::vector<int>& hosts,
                                int gpus_per_host) {
  try {
    assign_local_gpus(plan, RankLayout(plan), hosts, gpus_per_host);
  } catch (const whale::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("choose_transport: NCCL between GPUs, MPI between CPUs, the bridge where they mix") {
  using K = DeviceKind;
  CHECK(choose_transport({K::gpu, K::gpu}) == TransportKind::nccl);
  CHECK(choose_transport({K::gpu}) == TransportKind::nccl);
  CHECK(choose_transport({K::cpu, K::cpu, K::cpu}) == TransportKind::mpi);
  CHECK(choose_transport({K::gpu, K::cpu}) == TransportKind::host_bridge);
  CHECK(choose_transport({K::cpu, K::gpu, K::gpu}) == TransportKind::host_bridge);
  CHECK_THROWS_AS(choose_transport({}), std::invalid_argument);
  CHECK(std::string(to_string(TransportKind::host_bridge)) == "host-bridge");
  CHECK(device_kind_from_profile("gpu") == K::gpu);
  CHECK_THROWS_AS(device_kind_from_profile("tpu"), std::invalid_argument);
}

TEST_CASE("a mixed plan's groups get their transports from their members") {
  const whale::plan::Plan plan = mixed_plan();
  const RankLayout layout(plan);  // ranks 0..3 = devices 0..3
  CHECK(device_kind_of_rank(plan, layout, 2) == DeviceKind::cpu);
  CHECK(transport_of_group(plan, layout, {0, 3}) == TransportKind::nccl);   // stage 0 data
  CHECK(transport_of_group(plan, layout, {1, 2}) == TransportKind::host_bridge);  // stage 1
  CHECK(transport_of_group(plan, layout, {0, 1}) == TransportKind::nccl);   // pipeline pair
  CHECK(transport_of_group(plan, layout, {2, 3}) == TransportKind::host_bridge);
  CHECK(transport_of_group(plan, layout, {2}) == TransportKind::mpi);
}

TEST_CASE("local GPUs: the device's index on its node, -1 for CPU ranks") {
  const whale::plan::Plan plan = mixed_plan();
  const RankLayout layout(plan);
  // Ranks 0-2 on one host, rank 3 on another: as the cluster file says.
  CHECK(assign_local_gpus(plan, layout, {0, 0, 0, 3}, 2) == std::vector<int>{0, 1, -1, 0});
  CHECK(assign_local_gpus(plan, layout, {0, 0, 0, 3}, -1) == std::vector<int>{0, 1, -1, 0});
}

TEST_CASE("two ranks on one GPU is an error naming both ranks and the GPU") {
  const whale::plan::Plan plan = mixed_plan();
  // All four ranks on one host: devices 0 and 3 are both local GPU 0.
  CHECK(error_of_assignment(plan, {0, 0, 0, 0}, 2) ==
        "mixed.yaml: stages: one rank per GPU, but ranks 0 and 3 (plan devices 0 and 3) both "
        "use GPU 0 of one host (hint: NCCL cannot put two ranks on one GPU: launch one host "
        "per cluster node (mpirun --host/--map-by node), or give each device its own GPU in "
        "the cluster file)");
  CHECK(error_of_assignment(plan, {0, 0, 0, 3}, 1) ==
        "mixed.yaml: stages: rank 1 (plan device 1) to drive GPU 1, but its host has 1 GPU(s) "
        "(hint: run on machines shaped like the cluster file's nodes)");
  CHECK_THROWS_AS(assign_local_gpus(plan, RankLayout(plan), {0, 0}, 2), std::invalid_argument);
}

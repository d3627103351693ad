// File: test_rank_placement.cpp
// The placement check on hand-made rank reports: the A100 + V100 plan placed right, ranks on
// the wrong host, nodes sharing a host, GPUs missing or of the wrong model, --device overrides;
// and the GPU list as CUDA_VISIBLE_DEVICES restricts nvidia-smi's.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/visible_gpus.h"
#include "whale/exec/runtime/rank_placement.h"
#include "whale/plan/error.h"

using namespace whale::exec;

namespace {

const char* kA100 = "NVIDIA A100-SXM4-40GB";
const char* kV100 = "Tesla V100-SXM2-16GB";

whale::plan::Plan load(const std::string& relative) { return whale::plan::load_plan(std::string(WHALE_SOURCE_DIR) + "/" + relative); }

// configs/plans/a100-v100-gpt3-1.3b.yaml placed as planned: ranks 8n..8n+7 on host "nN", each
// seeing its node's eight GPUs.
std::vector<RankReport> right_reports() {
  std::vector<RankReport> reports;
  for (int rank = 0; rank < 64; ++rank) {
    const int node = rank / 8;
    reports.push_back(RankReport{"n" + std::to_string(node),
                                 std::vector<std::string>(8, node < 2 ? kA100 : kV100), "Xeon"});
  }
  return reports;
}

// The message of the whale::Error that check_rank_placement throws ("" when none).
std::string placement_error(const whale::plan::Plan& plan, const std::vector<RankReport>& reports,
                            DeviceCheck check = DeviceCheck::model) {
  try {
    check_rank_placement(plan, RankLayout(plan), reports, check);
  } catch (const whale::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("placement: the A100 + V100 plan on eight hosts as planned passes") {
  const whale::plan::Plan plan = load("configs/plans/a100-v100-gpt3-1.3b.yaml");
  CHECK(placement_error(plan, right_reports()) == "");
  CHECK(local_ranks(right_reports())[13] == 5);
  CHECK_THROWS_AS(check_rank_placement(plan, RankLayout(plan), {RankReport{}}, DeviceCheck::model),
                  std::invalid_argument);
}

TEST_CASE("placement: a rank on another host than its node's other ranks") {
  const whale::plan::Plan plan = load("configs/plans/a100-v100-gpt3-1.3b.yaml");
  std::vector<RankReport> reports = right_reports();
  reports[12].host = "n9";
  CHECK(placement_error(plan, reports) ==
        plan.source_file + ": rank 12 on host n9 (local rank 0): the host of cluster node a100-1, n1, where "
        "its rank 8 runs (hint: one host per cluster node, its ranks consecutive: launch with the files of "
        "whale-plan --export-launch (docs/run.md, \"Running across machines\"))");
  // Hosts are checked whatever --device says.
  CHECK(placement_error(plan, reports, DeviceCheck::none) != "");
}

TEST_CASE("placement: two GPU nodes on one host collide, unless every rank runs on its CPU") {
  const whale::plan::Plan plan = load("configs/plans/a100-v100-gpt3-1.3b.yaml");
  std::vector<RankReport> reports = right_reports();
  for (int rank = 8; rank < 16; ++rank) reports[rank].host = "n0";
  CHECK(placement_error(plan, reports).find(": rank 8 on host n0 (local rank 8): a host of its own for "
                                            "the GPUs of cluster node a100-1, but GPU rank 0 of node a100-0 "
                                            "runs there too, and their GPU indices would collide (hint: ") !=
        std::string::npos);
  CHECK(placement_error(plan, reports, DeviceCheck::none) == "");
}

TEST_CASE("placement: the V100 hosts where the plan has A100s, with and without --device gpu") {
  const whale::plan::Plan plan = load("configs/plans/a100-v100-gpt3-1.3b.yaml");
  std::vector<RankReport> reports = right_reports();
  for (int rank = 0; rank < 8; ++rank) reports[rank].gpus.assign(8, kV100);
  CHECK(placement_error(plan, reports) ==
        plan.source_file + ": rank 0 on host n0 (local rank 0): GPU 0 as a100-sxm4-40gb (plan device 0, "
        "cluster node a100-0), got \"Tesla V100-SXM2-16GB\" (hint: start the ranks on the hosts of the "
        "plan's nodes, or whale-run --device gpu to run on whatever GPUs the hosts have)");
  CHECK(placement_error(plan, reports, DeviceCheck::any_gpu) == "");
}

TEST_CASE("placement: a host without GPUs, and a rank that sees fewer GPUs than its index") {
  const whale::plan::Plan plan = load("configs/plans/a100-v100-gpt3-1.3b.yaml");
  std::vector<RankReport> reports = right_reports();
  for (int rank = 16; rank < 24; ++rank) reports[rank].gpus.clear();
  CHECK(placement_error(plan, reports).find(": rank 16 on host n2 (local rank 0): GPU 0 as v100-sxm2-16gb "
                                            "(plan device 16, cluster node v100-0), but the host shows no "
                                            "GPU (CPU: Xeon) (hint: ") != std::string::npos);
  CHECK(placement_error(plan, reports, DeviceCheck::any_gpu) != "");
  CHECK(placement_error(plan, reports, DeviceCheck::none) == "");
  reports = right_reports();
  reports[27].gpus.assign(1, kV100);  // srun --gpu-bind=single:1 shows each task one GPU
  CHECK(placement_error(plan, reports).find(": rank 27 on host n3 (local rank 3): GPU 3 as v100-sxm2-16gb "
                                            "(plan device 27, cluster node v100-1), but the rank sees 1 "
                                            "GPU(s) (hint: ") != std::string::npos);
}

TEST_CASE("placement: one GPU rank beside the CPU ranks of another node on its host passes") {
  // The shape of scripts/gpu-check.sh's mixed plans: GPU 0 as node "gpu", then CPU node "cpus".
  const std::string dir = std::string(WHALE_BINARY_DIR) + "/rank-placement";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/gpu-cpu.yaml")
      << "name: gpu-cpu\nnodes:\n"
         "  - {name: gpu, devices: [{model: a100-sxm4-40gb}], intra_link: {kind: nvlink, bandwidth_gbps: 1, latency_us: 1},"
         " network: {kind: ethernet, bandwidth_gbps: 1, latency_us: 1}}\n"
         "  - {name: cpus, devices: [{model: cpu, count: 2}], intra_link: {kind: shm, bandwidth_gbps: 1, latency_us: 1},"
         " network: {kind: ethernet, bandwidth_gbps: 1, latency_us: 1}}\n";
  std::ofstream(dir + "/plan.yaml") << "cluster: gpu-cpu.yaml\nmodel: " << WHALE_SOURCE_DIR
                                    << "/configs/models/tiny.yaml\nmicro_batch_size: 12\nmicro_batches: 1\n"
                                       "schedule: 1f1b\nstages:\n  - {layers: [0, 9], devices: \"0-2\", shares: [4, 4, 4]}\n";
  const whale::plan::Plan plan = whale::plan::load_plan(dir + "/plan.yaml");
  const std::vector<RankReport> one_host(3, RankReport{"box", {kA100}, ""});
  CHECK(placement_error(plan, one_host) == "");
}

TEST_CASE("placement: CPU nodes may share a host; one CPU node may not span two") {
  const whale::plan::Plan two_hosts = load("configs/plans/tiny/dp2-two-hosts.yaml");
  CHECK(placement_error(two_hosts, {RankReport{"a", {}, ""}, RankReport{"b", {}, ""}}) == "");
  CHECK(placement_error(two_hosts, {RankReport{"a", {}, ""}, RankReport{"a", {}, ""}}) == "");
  const whale::plan::Plan one_node = load("configs/plans/tiny/dp2.yaml");
  CHECK(placement_error(one_node, {RankReport{"a", {}, ""}, RankReport{"b", {}, ""}}).find(
            ": rank 1 on host b (local rank 0): the host of cluster node local, a, where its rank 0 runs") !=
        std::string::npos);
}

TEST_CASE("visible GPUs: nvidia-smi's list as CUDA_VISIBLE_DEVICES restricts it") {
  const std::string smi = "NVIDIA A10\nNVIDIA GeForce RTX 3090  \nNVIDIA A10\n";
  CHECK(select_visible_gpus(smi, nullptr) ==
        std::vector<std::string>{"NVIDIA A10", "NVIDIA GeForce RTX 3090", "NVIDIA A10"});
  CHECK(select_visible_gpus(smi, "1,0") == std::vector<std::string>{"NVIDIA GeForce RTX 3090", "NVIDIA A10"});
  CHECK(select_visible_gpus(smi, "2,7,0") == std::vector<std::string>{"NVIDIA A10"});
  CHECK(select_visible_gpus(smi, "").empty());
  CHECK(select_visible_gpus(smi, "GPU-8d3c0e4a").empty());
  CHECK(select_visible_gpus("", nullptr).empty());
}

TEST_CASE("host ids: each rank gets the lowest rank of its host name") {
  const auto report = [](const char* host) { return RankReport{host, {}, ""}; };
  CHECK(host_ids({report("b"), report("a"), report("b"), report("c"), report("a")}) ==
        std::vector<int>{0, 1, 0, 3, 1});
  CHECK(host_ids({report("box")}) == std::vector<int>{0});
  CHECK(host_ids({}).empty());
}

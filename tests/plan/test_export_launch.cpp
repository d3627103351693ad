// File: test_export_launch.cpp
// Launch files of a plan across machines: the shipped A100 + V100 plan as a Slurm script and an
// OpenMPI hostfile, against hand-written files; hosts of plans that use part of a node; --hosts.
#include <doctest/doctest.h>

#include <string>

#include "test_specs_util.h"
#include "whale/plan/launch.h"

using namespace whale::plan;
using whale::plan::testing::scratch_file;
using whale::plan::testing::source_path;

using whale::plan::testing::read_text;

namespace {

const std::string kHeteroPlan = "configs/plans/a100-v100-gpt3-1.3b.yaml";
const std::string kExpected = "tests/plan/data/launch/a100-v100-gpt3-1.3b";

}  // namespace

TEST_CASE("the A100 + V100 plan's Slurm script: a heterogeneous job of two node types") {
  const Plan plan = load_plan(source_path(kHeteroPlan));
  const LaunchSpec spec = whale_run_launch(plan, "", {});
  CHECK(slurm_script(spec) == read_text(source_path(kExpected + ".slurm.sh")));
}

TEST_CASE("the A100 + V100 plan's hostfile with every node mapped to a real host") {
  const Plan plan = load_plan(source_path(kHeteroPlan));
  const HostMap hosts = parse_host_map(
      "a100-0=gpu01,a100-1=gpu02,v100-0=gpu11,v100-1=gpu12,v100-2=gpu13,v100-3=gpu14,v100-4=gpu15,"
      "v100-5=gpu16", plan.cluster, "--hosts");
  const LaunchSpec spec = whale_run_launch(plan, "", hosts);
  CHECK(mpirun_hostfile(spec, "hosts.txt") == read_text(source_path(kExpected + ".hostfile")));
  CHECK(mpirun_command(spec, "hosts.txt") ==
        "mpirun -np 64 --hostfile hosts.txt --map-by slot --bind-to none whale-run plan.yaml --data DATA");
}

TEST_CASE("launch hosts: a plan on part of the nodes asks for GPUs up to its largest index") {
  const Cluster cluster = load_cluster(source_path("configs/clusters/a100-v100.yaml"));
  // Devices 1, 2 of a100-0 and 8 of a100-1 (its GPU 0), then 16..17 of v100-0.
  const std::vector<LaunchHost> hosts = launch_hosts(cluster, {1, 2, 8, 16, 17}, {{"v100-0", "big"}});
  REQUIRE(hosts.size() == 3);
  CHECK(hosts[0].node == "a100-0");
  CHECK(hosts[0].host == "a100-0");
  CHECK(hosts[0].first_rank == 0);
  CHECK(hosts[0].tasks == 2);
  CHECK(hosts[0].gpus == 3);
  CHECK(hosts[1].first_rank == 2);
  CHECK(hosts[1].tasks == 1);
  CHECK(hosts[1].gpus == 1);
  CHECK_FALSE(hosts[0].mapped);
  CHECK(hosts[2].host == "big");
  CHECK(hosts[2].mapped);
  CHECK(hosts[2].first_rank == 3);
  CHECK(hosts[2].models == std::vector<std::string>{"v100-sxm2-16gb"});
  CHECK_THROWS_AS(launch_hosts(cluster, {2, 1}, {}), std::invalid_argument);
  CHECK_THROWS_AS(launch_hosts(cluster, {64}, {}), std::invalid_argument);
}

TEST_CASE("one node type gives one job without hetjob; CPU nodes ask for no GPUs") {
  const Plan plan = load_plan(source_path("configs/plans/tiny/dp3-uneven.yaml"));
  const std::string script = slurm_script(whale_run_launch(plan, "configs/plans/tiny/dp3-uneven.yaml", {}));
  CHECK(script.find("#SBATCH --nodes=1\n#SBATCH --nodelist=local\n#SBATCH --ntasks-per-node=3\nset -euo") !=
        std::string::npos);
  CHECK(script.find("hetjob") == std::string::npos);
  CHECK(script.find("gpus-per-node") == std::string::npos);
  CHECK(script.find("PLAN=\"${PLAN:-configs/plans/tiny/dp3-uneven.yaml}\"") != std::string::npos);
  CHECK(script.find("consecutive.\nsrun --distribution=block whale-run \"$PLAN\" --data \"$DATA\"\n") !=
        std::string::npos);
}

TEST_CASE("--hosts: malformed pairs, unknown nodes, repeated nodes and shared hosts are refused") {
  const Cluster cluster = load_cluster(source_path("configs/clusters/a100-v100.yaml"));
  CHECK(parse_host_map("a100-0=gpu01.example.org,v100-5=n_7", cluster, "--hosts") ==
        HostMap{{"a100-0", "gpu01.example.org"}, {"v100-5", "n_7"}});
  CHECK_SPEC_ERROR([&] { parse_host_map("a100-0", cluster, "--hosts"); }, "", "--hosts",
                   "NODE=HOST pairs separated by commas, got 'a100-0'");
  CHECK_SPEC_ERROR([&] { parse_host_map("", cluster, "--hosts"); }, "", "--hosts", "got ''");
  CHECK_SPEC_ERROR([&] { parse_host_map("a100-0=x,", cluster, "--hosts"); }, "", "--hosts", "got ''");
  CHECK_SPEC_ERROR([&] { parse_host_map("a100-9=x", cluster, "--hosts"); }, "", "--hosts",
                   "a node of cluster a100-v100, got 'a100-9' (hint: its nodes are a100-0, a100-1, v100-0, "
                   "v100-1, v100-2, v100-3, ...)");
  CHECK_SPEC_ERROR([&] { parse_host_map("a100-0=gpu 1", cluster, "--hosts"); }, "", "--hosts",
                   "for node a100-0, got 'gpu 1'");
  CHECK_SPEC_ERROR([&] { parse_host_map("a100-0=", cluster, "--hosts"); }, "", "--hosts", "got ''");
  CHECK_SPEC_ERROR([&] { parse_host_map("a100-0=a,a100-0=b", cluster, "--hosts"); }, "", "--hosts",
                   "each node once, got a100-0 twice");
  CHECK_SPEC_ERROR([&] { parse_host_map("a100-0=a,v100-0=a", cluster, "--hosts"); }, "", "--hosts",
                   "nodes a100-0 and v100-0 both map to a");
  CHECK_SPEC_ERROR([&] { parse_launcher("srun", "--export-launch"); }, "", "--export-launch",
                   "slurm or mpirun, got 'srun'");
}

TEST_CASE("write_launch writes the file whole and says how to run it") {
  const Plan plan = load_plan(source_path("configs/plans/tiny/dp2.yaml"));
  const LaunchSpec spec = whale_run_launch(plan, "dp2.yaml", {{"local", "box"}});
  const std::string path = scratch_file("launch/dp2.hosts", "old");
  CHECK(write_launch(Launcher::mpirun, spec, path, "--export-launch") ==
        "OpenMPI hostfile of whale-run of dp2.yaml: " + path + "\n  run: mpirun -np 2 --hostfile " + path +
            " --map-by slot --bind-to none whale-run dp2.yaml --data DATA\n");
  const std::string text = read_text(path);
  CHECK(text.find("Host names are") == std::string::npos);
  CHECK(text.substr(text.size() - 40) == "# ranks 0-1: local, 2 x cpu\nbox slots=2\n");
  CHECK_SPEC_ERROR([&] { write_launch(Launcher::slurm, spec, "/nonexistent/job.sh", "--export-launch"); },
                   "/nonexistent/job.sh", "--export-launch", "");
}

TEST_CASE("whale-profile's links across nodes: one rank on each node's first device") {
  const Cluster cluster = load_cluster(source_path("configs/clusters/a100-v100.yaml"));
  const LaunchSpec between = links_launch(cluster, "v100-3,a100-1", {{"a100-1", "gpu02"}}, "", "--nodes");
  CHECK(mpirun_command(between, "h") ==
        "mpirun -np 2 --hostfile h --map-by slot --bind-to none whale-profile --links --device cuda:0 --out links.yaml");
  REQUIRE(between.hosts.size() == 2);
  CHECK(between.hosts[0].host == "gpu02");
  CHECK(between.hosts[1].host == "v100-3");
  CHECK(between.hosts[1].gpus == 1);
  const std::string script = slurm_script(links_launch(cluster, "", {}, "a100.yaml", "--nodes"));
  CHECK(script.find("#SBATCH --nodes=2\n#SBATCH --nodelist=a100-0,a100-1\n#SBATCH --ntasks-per-node=1\n"
                    "#SBATCH --gpus-per-node=1\n") != std::string::npos);
  CHECK(script.find("\nOUT=\"${OUT:-a100.yaml}\"") != std::string::npos);
  CHECK(script.find("\nsrun --distribution=block --gpu-bind=none whale-profile --links --device cuda:0 --out \"$OUT\"\n") !=
        std::string::npos);
  CHECK(mpirun_command(links_launch(load_cluster(source_path("configs/clusters/cpu-two-hosts.yaml")), "", {}, "", "--nodes"), "h")
            .find("whale-profile --links --device cpu --out links.yaml") != std::string::npos);
  CHECK_SPEC_ERROR([&] { links_launch(cluster, "a100-0", {}, "", "--nodes"); }, "", "--nodes",
                   "at least 2 nodes to time the links between, got 1");
  CHECK_SPEC_ERROR([&] { links_launch(cluster, "a100-0,a100-0", {}, "", "--nodes"); }, "", "--nodes",
                   "each node once, got a100-0 twice");
  CHECK_SPEC_ERROR([&] { links_launch(cluster, "a100-0,x", {}, "", "--nodes"); }, "", "--nodes",
                   "a node of cluster a100-v100, got 'x'");
  CHECK_SPEC_ERROR([&] { links_launch(load_cluster(source_path("configs/clusters/cpu-local.yaml")), "", {}, "", "--nodes"); },
                   "", "--nodes", "got 1");
}

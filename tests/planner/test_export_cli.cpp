// File: test_export_cli.cpp
// whale-plan end to end with a Hugging Face config.json as the model, and the exports: a plan
// Megatron-LM cannot express fails with one line, --export-constrained writes the best
// uniform plan and prints both throughputs, and an export that fails leaves nothing written.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace {

struct Run {
  int exit_code = -1;
  std::string out, err;
};

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs whale-plan with `args` from the source root; stdout and stderr go to the build folder.
Run whale_plan(const std::string& args) {
  const std::string base = std::string(WHALE_BINARY_DIR) + "/test_export_cli";
  const std::string cmd = std::string(WHALE_PLAN_EXE) + " " + args + " > " + base + ".out 2> " + base + ".err";
  const int status = std::system(cmd.c_str());
  return Run{WIFEXITED(status) ? WEXITSTATUS(status) : -1, read(base + ".out"), read(base + ".err")};
}

}  // namespace

TEST_CASE("whale-plan plans Llama 3 70B from its config.json on a shipped cluster") {
  const Run r = whale_plan("--cluster configs/clusters/a100-64.yaml --model configs/models/hf/llama3-70b-config.json");
  CAPTURE(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("best plan: ") == 0);
  CHECK(r.out.find("256 micro-batches of 2 samples, bf16") != std::string::npos);
}

TEST_CASE("exports of a heterogeneous plan: refused with one line, or constrained") {
  const std::string file = std::string(WHALE_BINARY_DIR) + "/test_export_cli.megatron.sh";
  std::remove(file.c_str());
  // --precision bf16: the model's own precision, without the precision advice's warning (and
  // its second search), so that stderr holds the export's lines alone.
  const std::string args =
      "--cluster configs/clusters/a100-v100.yaml --model configs/models/gpt3-1.3b.yaml --precision bf16 --export-megatron " + file;
  const Run refused = whale_plan(args);
  CHECK(refused.exit_code == 2);
  CHECK(refused.err.rfind("whale-plan: error: ", 0) == 0);
  CHECK(refused.err.find("a plan Megatron-LM can express, but ") != std::string::npos);
  CHECK(refused.err.find('\n') == refused.err.size() - 1);
  const Run constrained = whale_plan(args + " --export-constrained");
  CAPTURE(constrained.err);
  CHECK(constrained.exit_code == 0);
  CHECK(constrained.err.find("Megatron-LM cannot express the best plan:\n  - ") == 0);
  CHECK(constrained.err.find("\n  best plan: ") != std::string::npos);
  // The A100s alone, uniform, run faster than any uniform plan of all 64 devices, whose V100s
  // price bf16 at fp32: the export takes them, and it is faster than the baseline.
  const std::string exported = "\n  exported instead, the fastest plan it can express, uniform pp1 tp1 dp16 on the "
                               "a100-sxm4-40gb alone (devices 0-15): ";
  const size_t at = constrained.err.find(exported);
  REQUIRE(at != std::string::npos);
  const size_t baseline_at = constrained.out.find("baseline (heterogeneity-unaware uniform pp1 tp2 dp32 on devices 0-63, ");
  REQUIRE(baseline_at != std::string::npos);
  const double baseline = std::stod(constrained.out.substr(constrained.out.find("): ", baseline_at) + 3));
  CHECK(std::stod(constrained.err.substr(at + exported.size())) > 3 * baseline);
  CHECK(read(file).find("WHALE_MEGATRON_ARGS=(\n  --tensor-model-parallel-size 1\n") != std::string::npos);
  CHECK(read(file).find("run on devices 0-15.") != std::string::npos);
}

TEST_CASE("an export that fails leaves no output of the command written") {
  const std::string base = std::string(WHALE_BINARY_DIR) + "/test_export_cli.fails";
  // Four nodes of three V100s: at a global batch of 64 every uniform plan has dp 4, 2 or 1, thus
  // pp 3, 6 or 12, none of which divides Llama-2 7B's 32 layers as DeepSpeed needs; Megatron-LM
  // can take pp 3.
  std::ofstream(base + ".cluster.yaml")
      << "name: four-by-three\nnetwork: {kind: infiniband, bandwidth_gbps: 200, latency_us: 5}\nnodes:\n"
      << "  - {name: n1, devices: [{model: v100-sxm2-16gb, count: 3}], intra_link: {kind: nvlink, bandwidth_gbps: 1200, latency_us: 3}}\n"
      << "  - {name: n2, devices: [{model: v100-sxm2-16gb, count: 3}], intra_link: {kind: nvlink, bandwidth_gbps: 1200, latency_us: 3}}\n"
      << "  - {name: n3, devices: [{model: v100-sxm2-16gb, count: 3}], intra_link: {kind: nvlink, bandwidth_gbps: 1200, latency_us: 3}}\n"
      << "  - {name: n4, devices: [{model: v100-sxm2-16gb, count: 3}], intra_link: {kind: nvlink, bandwidth_gbps: 1200, latency_us: 3}}\n";
  for (const char* suffix : {".plan.yaml", ".megatron.sh", ".ds.json"}) std::remove((base + suffix).c_str());
  const std::string args = "--cluster " + base + ".cluster.yaml --model configs/models/llama2-7b.yaml --global-batch 64 " +
                           "--precision bf16 --export-constrained --out " + base + ".plan.yaml --export-megatron " +
                           base + ".megatron.sh --export-deepspeed " + base + ".ds.json";
  const Run r = whale_plan(args);
  CAPTURE(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--export-deepspeed: a plan that DeepSpeed can express and that fits, got none: of the uniform "
                   "plans of every device, of a pipeline depth that divides the transformer layers, none divides the "
                   "global batch of 64") != std::string::npos);
  for (const char* suffix : {".plan.yaml", ".megatron.sh", ".ds.json"}) {
    CAPTURE(suffix);
    CHECK_FALSE(std::ifstream(base + suffix).good());
  }
  // Without the DeepSpeed export, the same command writes the plan and Megatron-LM's pp 3.
  const Run megatron = whale_plan(args.substr(0, args.find(" --export-deepspeed")));
  CHECK(megatron.exit_code == 0);
  CHECK(read(base + ".megatron.sh").find("--pipeline-model-parallel-size 3\n") != std::string::npos);
  CHECK(std::ifstream(base + ".plan.yaml").good());
}

TEST_CASE("whale-plan --allow-tf32 plans fp32 training with TF32 GEMMs, reports them and writes the setting") {
  const std::string file = std::string(WHALE_BINARY_DIR) + "/test_export_cli.tf32-plan.yaml";
  std::remove(file.c_str());
  const std::string args = "--cluster configs/clusters/mixed-node.yaml --model configs/models/tiny.yaml --out " + file;
  const Run plain = whale_plan(args);
  CAPTURE(plain.err);
  CHECK(plain.exit_code == 0);
  CHECK(plain.out.find("\nprecision ") == std::string::npos);  // fp32 everywhere
  CHECK(read(file).find("allow_tf32") == std::string::npos);
  const Run tf32 = whale_plan(args + " --allow-tf32");
  CAPTURE(tf32.err);
  CHECK(tf32.exit_code == 0);
  // Both device models of the node have TF32 tensor cores.
  CHECK(tf32.out.find("\nprecision a10: fp32 GEMMs run as tf32 (allow_tf32)\n") != std::string::npos);
  CHECK(tf32.out.find("\nprecision rtx3090: fp32 GEMMs run as tf32 (allow_tf32)\n") != std::string::npos);
  CHECK(read(file).find("\nallow_tf32: true\n") != std::string::npos);
}

// File: test_export_cli.cpp
// whale-plan end to end with a Hugging Face config.json as the model, and the exports: a plan
// Megatron-LM cannot express fails with one line, and --export-constrained writes the best
// uniform plan and prints both throughputs.
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
  CHECK(constrained.err.find("\n  exported instead, the best uniform plan uniform pp1 tp2 dp32: ") != std::string::npos);
  CHECK(read(file).find("WHALE_MEGATRON_ARGS=(\n  --tensor-model-parallel-size 2\n") != std::string::npos);
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

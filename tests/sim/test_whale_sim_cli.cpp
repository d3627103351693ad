// File: test_whale_sim_cli.cpp
// The whale-sim binary: bad input is one line on stderr and exit code 2; a good plan prints
// JSON with the fields that docs name. Needs the whale-sim target built (ctest after a build).
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace {

struct Run {
  int exit_code = -1;
  std::string out, err;
};

std::string slurp(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

/// <build>/tests/sim-cli-scratch, where these tests write their files.
std::string scratch_folder() {
  const std::string folder = std::string(WHALE_BINARY_DIR) + "/tests/sim-cli-scratch";
  std::filesystem::create_directories(folder);
  return folder;
}

Run whale_sim(const std::string& args) {
  const std::string binary = std::string(WHALE_BINARY_DIR) + "/apps/whale-sim";
  INFO("build the whale-sim target first: ", binary);
  REQUIRE(std::filesystem::exists(binary));
  const std::string dir = scratch_folder();
  const std::string out = dir + "/whale_sim_cli_test.out", err = dir + "/whale_sim_cli_test.err";
  const int status = std::system((binary + " " + args + " > " + out + " 2> " + err).c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = scratch_folder() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("whale-sim: a missing plan file is one error line and exit code 2") {
  const Run run = whale_sim("/nonexistent/plan.yaml");
  CHECK(run.exit_code == 2);
  CHECK(run.err.rfind("whale-sim: error: ", 0) == 0);
  CHECK(run.err.find("/nonexistent/plan.yaml") != std::string::npos);
  CHECK(run.err.find('\n') == run.err.size() - 1);
  CHECK(run.out.empty());
}

TEST_CASE("whale-sim: malformed YAML names the file, exit code 2") {
  const std::string path = write_temp("whale_sim_malformed.yaml", "stages: [ {layers: [0, 1]\n");
  const Run run = whale_sim(path);
  CHECK(run.exit_code == 2);
  CHECK(run.err.rfind("whale-sim: error: " + path, 0) == 0);
  CHECK(run.err.find('\n') == run.err.size() - 1);
}

TEST_CASE("whale-sim: a plan whose devices are not in the cluster, exit code 2") {
  const std::string source = std::string(WHALE_SOURCE_DIR);
  const std::string path = write_temp(
      "whale_sim_bad_devices.yaml",
      "cluster: " + source + "/configs/clusters/cpu-local-4.yaml\nmodel: " + source +
          "/configs/models/tiny.yaml\nprecision: fp32\nmicro_batch_size: 2\nmicro_batches: 1\n"
          "schedule: 1f1b\nstages:\n  - {layers: [0, 9], devices: \"0,99\"}\n");
  const Run run = whale_sim(path);
  CHECK(run.exit_code == 2);
  CHECK(run.err.find(path) != std::string::npos);
  CHECK(run.err.find("stages[0].devices") != std::string::npos);
}

TEST_CASE("whale-sim --format json prints the estimate's fields") {
  const Run run = whale_sim(std::string(WHALE_SOURCE_DIR) +
                            "/configs/plans/a100-v100-gpt3-1.3b.yaml --format json");
  CHECK(run.exit_code == 0);
  for (const char* key : {"\"step_time_s\"", "\"samples_per_s\"", "\"tokens_per_s\"", "\"mfu\"",
                          "\"bubble_fraction\"", "\"fits\"", "\"breakdown\"", "\"devices\"",
                          "\"peak_memory_bytes\"", "\"capacity_bytes\"", "\"busy_s\""}) {
    CHECK_MESSAGE(run.out.find(key) != std::string::npos, key);
  }
}

TEST_CASE("whale-sim: a bad command line is one error line and exit code 2") {
  const Run run = whale_sim(std::string(WHALE_SOURCE_DIR) +
                            "/configs/plans/a100-v100-gpt3-1.3b.yaml --format xml");
  CHECK(run.exit_code == 2);
  CHECK(run.err.rfind("whale-sim: error: --format", 0) == 0);
  CHECK(run.err.find('\n') == run.err.size() - 1);
}

TEST_CASE("whale-sim --compare: a plan's own predicted trace compares at ratio 1, in text and JSON") {
  const std::string plan = std::string(WHALE_SOURCE_DIR) + "/configs/plans/tiny/pp2-zb-h1.yaml";
  const std::string folder = std::string(WHALE_BINARY_DIR) + "/tests/trace-scratch";
  std::filesystem::create_directories(folder);
  const std::string trace = folder + "/whale_sim_cli_predicted.json";
  REQUIRE(whale_sim(plan + " --trace " + trace).exit_code == 0);
  const Run text = whale_sim(plan + " --compare " + trace);
  CHECK(text.exit_code == 0);
  CHECK(text.out.find("ratio 1.000\n") != std::string::npos);  // the step time
  for (const char* row : {"\n  forward ", "\n  backward-input ", "\n  backward-weight ",
                          "\n  pp-send-recv ", "\n  optimizer "}) {
    const std::size_t at = text.out.find(row);
    REQUIRE_MESSAGE(at != std::string::npos, row);
    CHECK_MESSAGE(text.out.substr(at, text.out.find('\n', at + 1) - at).find("    1.000   ") != std::string::npos,
                  row);
  }
  const Run json = whale_sim(plan + " --compare " + trace + " --format json");
  CHECK(json.exit_code == 0);
  CHECK(json.out.find("\n  \"compare\": {\"predicted_step_s\": ") != std::string::npos);
  CHECK(json.out.find("{\"class\": \"backward-weight\"") != std::string::npos);
  CHECK(json.out.substr(json.out.size() - 10) == "\n    ]}\n}\n");  // the compare object closes the report
}

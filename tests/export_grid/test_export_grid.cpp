// File: test_export_grid.cpp
// Every shipped cluster x model pair that has a plan, exported constrained to Megatron-LM and
// to DeepSpeed: the export is chosen (and no file written), or it says that no plan it can
// express fits; it never ends with a limit the constrained plan still has (sequence
// parallelism under DeepSpeed, selective recomputation, Megatron-LM's middle stages) or with a
// hint to pass --export-constrained again.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "whale/plan/error.h"
#include "whale/plan/export.h"
#include "whale/plan/planner.h"
#include "whale/sim/simulator.h"

using namespace whale;

namespace {

std::vector<std::string> shipped(const std::string& folder, const std::string& extension) {
  std::vector<std::string> out;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(WHALE_SOURCE_DIR) + "/" + folder)) {
    if (entry.path().extension() == extension) out.push_back(entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("every shipped cluster x model pair with a plan exports constrained to both frameworks") {
  std::vector<std::string> models = shipped("configs/models", ".yaml");
  for (const std::string& hf : shipped("configs/models/hf", ".json")) models.push_back(hf);
  const std::string out = std::string(WHALE_BINARY_DIR) + "/test_export_grid";
  std::filesystem::create_directories(out);
  const sim::Simulator simulator;
  plan::PlannerOptions options;
  options.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int pairs = 0, written = 0, none_fits = 0, moe_limits = 0;
  for (const std::string& cluster_path : shipped("configs/clusters", ".yaml")) {
    const plan::Cluster cluster = plan::load_cluster(cluster_path);
    for (const std::string& model_path : models) {
      const plan::Model model = plan::load_model(model_path);
      plan::PlanResult result;
      try {
        result = plan::search_plans(cluster, model, simulator, options);
      } catch (const Error&) {
        continue;  // no plan of this pair fits: nothing to export
      }
      ++pairs;
      for (const plan::Framework framework : {plan::Framework::megatron, plan::Framework::deepspeed}) {
        const std::string name = std::filesystem::path(cluster_path).stem().string() + " " +
                                 std::filesystem::path(model_path).filename().string() + " " +
                                 plan::to_string(framework);
        CAPTURE(name);
        const std::string file = out + "/export";
        std::filesystem::remove(file);
        try {
          const plan::ChosenExport chosen =
              plan::choose_export(result, cluster, model, simulator, options, framework, true, file);
          CHECK_FALSE(std::filesystem::exists(file));  // chosen, not written
          const std::string& said = chosen.report;
          CHECK(said.find(": " + file + "\n") != std::string::npos);
          const std::string& text = chosen.text;
          CHECK_FALSE(text.empty());
          // Trained as fp16 where a device lacks bf16 units: the file then asks for no bf16.
          if (said.find("as fp16 with dynamic loss scaling") != std::string::npos) {
            CHECK(text.find("\"bf16\": {") == std::string::npos);
            CHECK(text.find("  --bf16\n") == std::string::npos);
          }
          ++written;
        } catch (const Error& e) {
          const std::string what = e.what();
          CAPTURE(what);
          // No plan the framework can express fits (for DeepSpeed, which places no stage
          // boundaries, none of a pipeline depth that divides the layers).
          const bool none = what.find(std::string("a plan that ") + plan::to_string(framework) +
                                      " can express and that fits, got none") != std::string::npos;
          // A mixture-of-experts model: DeepSpeed's config has no MoE layers, whatever the plan.
          const bool moe = framework == plan::Framework::deepspeed && model.moe &&
                           what.find("got the mixture-of-experts model '" + model.name + "'") != std::string::npos;
          CHECK((none || moe));
          if (moe) {
            ++moe_limits;
            continue;
          }
          CHECK(e.hint().find("--export-constrained exports") == std::string::npos);
          ++none_fits;
        }
      }
    }
  }
  MESSAGE(pairs << " pairs with a plan: " << written << " exports written, " << none_fits
                << " with no plan it can express that fits, "
                << moe_limits << " DeepSpeed exports of an MoE model");
  CHECK(pairs > 100);
  CHECK(written >= pairs);
}

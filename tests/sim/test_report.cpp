// File: test_report.cpp
// The text and JSON reports of a tiny hand-made estimate: exact formatted lines.
#include <doctest/doctest.h>

#include "sim_fixtures.h"
#include "whale/sim/report.h"

using namespace whale;
using namespace whale::sim;

namespace {

struct Fixture {
  plan::Plan plan;
  plan::Estimate est;
  Fixture() {
    const plan::Cluster c = test::make_cluster(1, 2, test::flat_profile(1e14, 1e12, 2 * kBytesPerGiB),
                                               test::link(1e11, 0), test::link(1e10, 0));
    plan = test::pipeline_plan(c, {test::gemm_layer(1, 1, 1, 0, 10), test::gemm_layer(1, 1, 1, 0, 10)},
                               plan::ScheduleKind::gpipe, 4);
    est.step_time_s = 0.5;
    est.samples_per_s = 8;
    est.tokens_per_s = 8;
    est.mfu = 0.25;
    est.bubble_fraction = 0.2;
    est.fits = false;
    est.breakdown.compute_s = 0.4;
    est.breakdown.idle_s = 0.1;
    est.devices = {{0, "flat", 3 * kBytesPerGiB, 2 * kBytesPerGiB, 0.4, 1.5, 2.5 * kBytesPerGiB},
                   {1, "flat", kBytesPerGiB, 2 * kBytesPerGiB, 0.4, 1.5, 0.5 * kBytesPerGiB}};
    plan::FrameworkMemory& framework = plan.cluster.profiles.at("flat").framework_memory;
    framework = plan::FrameworkMemory{};
    framework.reserve_bytes = 0.5 * kBytesPerGiB;
    framework.source = "test figures";
  }
};

}  // namespace

TEST_CASE("text report: summary lines and one table row per stage") {
  const Fixture f;
  const std::string text = sim::format_text_report(f.plan, f.est);
  CHECK(text.find("step time            0.500000 s\n") != std::string::npos);
  CHECK(text.find("MFU                     25.00 %\n") != std::string::npos);
  CHECK(text.find("fits in memory             NO\n") != std::string::npos);
  CHECK(text.find("  compute              0.400000 s   80.0%\n") != std::string::npos);
  CHECK(text.find("    0     0-0     0                      1 x 1   1                none"
                  "           3.00 / 2.00     !!  flat\n") != std::string::npos);
  CHECK(text.find("    1     1-1     1                      1 x 1   1                none"
                  "           1.00 / 2.00         flat\n") != std::string::npos);
  // Device 0 overflows: 3 GiB of 2, of which 2.5 GiB tensors and 0.5 GiB the framework's.
  CHECK(text.find("\nOUT OF MEMORY on 1 of 2 devices (predicted peak above capacity):\n"
                  "  device 0 flat: 3.00 GiB of 2.00 GiB (tensors 2.50 GiB, framework 0.50 GiB)\n"
                  "  flat: framework reserve 0.50 GiB + allocator slack 0% (test figures); fused_softmax attention\n") !=
        std::string::npos);
}

TEST_CASE("text report: no out-of-memory section when every device fits") {
  Fixture f;
  f.est.devices[0].peak_memory_bytes = 2 * kBytesPerGiB;  // exactly the capacity
  f.est.fits = true;
  CHECK(sim::out_of_memory_text(f.plan, f.est).empty());
  CHECK(sim::format_text_report(f.plan, f.est).find("OUT OF MEMORY") == std::string::npos);
}

TEST_CASE("JSON report: fixed keys and number formats") {
  const Fixture f;
  const std::string json = sim::format_json_report(f.plan, f.est);
  CHECK(json.find("\"step_time_s\": 0.5,\n") != std::string::npos);
  CHECK(json.find("\"fits\": false,\n") != std::string::npos);
  CHECK(json.find("{\"id\": 0, \"model\": \"flat\", \"peak_memory_bytes\": 3221225472, "
                  "\"tensor_memory_bytes\": 2684354560, \"capacity_bytes\": 2147483648, \"busy_s\": 0.4, \"achieved_tflops\": 1.5}") !=
        std::string::npos);
  CHECK(json.find("{\"stage\": 1, \"layers\": [1, 1], \"dp\": 1, \"tp\": 1, \"devices\": [1], "
                  "\"shares\": [1], \"recompute\": \"none\"}") != std::string::npos);
  CHECK(sim::format_number(1.0 / 3) == "0.333333333");
  CHECK(sim::format_bytes(1234.6) == "1235");
}

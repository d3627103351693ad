// File: test_layer_times_json.cpp
// Measured layer times from a per-layer profile JSON (micro-batch -> tp -> layer index ->
// [forward_s, backward_s, ...], as Sailor's planner stores its profiles), made here: kinds by
// index, medians over the transformer blocks, and the errors; whale-calibrate's choice of reader.
#include <doctest/doctest.h>


#include "calibrate_scratch.h"
#include "whale/plan/error.h"
#include "whale/plan/model.h"
#include "whale/sim/layer_times_file.h"

using namespace whale;

namespace {

std::string scratch(const std::string& name, const std::string& text) {
  return test::calibrate_scratch("layer-json", name, text);
}

const std::string kProfiles = std::string(WHALE_SOURCE_DIR) + "/profiles";

// Micro-batch 2 at tp 1 and tp 2: an embedding, three blocks and a head; the third entry of a
// layer (Sailor's optimizer step) is ignored.
const char* const kProfile = R"({
  "2": {
    "1": {"0": [0.001, 0.0005, 9], "1": [0.010, 0.020, 9], "2": [0.012, 0.022, 9],
          "3": [0.011, 0.030, 9], "4": [0.004, 0.005, 9]},
    "2": {"0": [0.001, 0.0004], "1": [0.006, 0.012], "2": [0.005, 0.011], "3": [0.007, 0.013],
          "4": [0.003, 0.004]}
  }
})";

void check(const plan::MeasuredLayerTime& m, plan::LayerKind kind, int tp, double forward_s, double backward_s) {
  CHECK(m.kind == kind);
  CHECK(m.tp == tp);
  CHECK(m.micro_batch == 2);
  CHECK(m.forward_s == forward_s);
  CHECK(m.backward_s == backward_s);
}

}  // namespace

TEST_CASE("a per-layer profile JSON gives one measurement per layer kind, the blocks' median") {
  const std::string path = scratch("profile.json", kProfile);
  const plan::LayerTimes times = plan::load_layer_profile_json(path);
  CHECK(times.source == path);
  REQUIRE(times.measurements.size() == 6);
  using K = plan::LayerKind;
  check(times.measurements[0], K::embedding, 1, 0.001, 0.0005);
  check(times.measurements[1], K::transformer, 1, 0.011, 0.022);  // medians of 10/12/11 and 20/22/30 ms
  check(times.measurements[2], K::head, 1, 0.004, 0.005);
  check(times.measurements[4], K::transformer, 2, 0.006, 0.012);
  // whale-calibrate --layer-times picks the reader by the content; the JSON needs its device model.
  const sim::LayerTimesByModel by_model = sim::load_layer_times(path, {"a100-sxm4-80gb"}, kProfiles);
  REQUIRE(by_model.count("a100-sxm4-80gb"));
  CHECK(by_model.at("a100-sxm4-80gb").measurements.size() == 6);
  CHECK_THROWS_WITH_AS(sim::load_layer_times(path, {}, kProfiles), doctest::Contains("--layer-times-device"), Error);
  const std::string csv = scratch("times.csv", "device_model,layer_kind,tp,micro_batch,forward_s,backward_s\n"
                                               "a100-sxm4-80gb,transformer,1,2,0.011,0.022\n");
  CHECK(sim::load_layer_times(csv, {}, kProfiles).at("a100-sxm4-80gb").measurements.size() == 1);
  CHECK_THROWS_WITH_AS(sim::load_layer_times(csv, {"a100-sxm4-80gb"}, kProfiles),
                       doctest::Contains("--layer-times-device"), Error);
}

TEST_CASE("a per-layer profile JSON that is not one fails naming the field") {
  const std::string two = scratch("two.json", R"({"1": {"1": {"0": [1, 1], "1": [1, 1]}}})");
  CHECK_THROWS_WITH_AS(plan::load_layer_profile_json(two), doctest::Contains("at least three layers"), Error);
  const std::string key = scratch("key.json", R"({"one": {"1": {"0": [1, 1], "1": [1, 1], "2": [1, 1]}}})");
  CHECK_THROWS_WITH_AS(plan::load_layer_profile_json(key), doctest::Contains("got 'one'"), Error);
  const std::string gap = scratch("gap.json", R"({"1": {"1": {"0": [1, 1], "1": [1, 1], "5": [1, 1]}}})");
  CHECK_THROWS_WITH_AS(plan::load_layer_profile_json(gap), doctest::Contains("layer indices 0..2"), Error);
  const std::string zero = scratch("zero.json", R"({"1": {"1": {"0": [1, 0], "1": [1, 1], "2": [1, 1]}}})");
  CHECK_THROWS_WITH_AS(plan::load_layer_profile_json(zero), doctest::Contains("1.1.0"), Error);
}

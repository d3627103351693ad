// File: test_hints.cpp
// Hints: loading, checking (each bad or contradictory hint named in the message), and the
// planner honouring them.
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <string>

#include "planner_fixtures.h"
#include "whale/plan/error.h"
#include "whale/plan/hints.h"

using namespace whale;

namespace {

// The message of the whale::Error that checking `text` (as a hints file) raises.
std::string hint_error(const std::string& name, const std::string& text, const plan::Cluster& cluster,
                       const plan::Model& model) {
  try {
    plan::check_hints(plan::load_hints(test::temp_file(name, text)), cluster, model);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a hints file loads every field") {
  const plan::Hints h = plan::load_hints(test::temp_file("hints_ok.yaml", R"(layers:
  - {range: [1, 4], tp: 2}
  - {range: [5, 9], dp: 2}
stage_boundaries: [0, 5]
schedules: [1f1b, gpipe]
max_pipeline_depth: 2
exclude_devices: "6-7"
)"));
  REQUIRE(h.layers.size() == 2);
  CHECK(h.layers[0].first == 1);
  CHECK(h.layers[0].last == 4);
  CHECK(h.layers[0].tp == 2);
  CHECK(h.layers[1].dp == 2);
  CHECK(h.layers[1].yaml_path == "layers[1]");
  CHECK(h.stage_boundaries == std::vector<int>{0, 5});
  CHECK(h.schedules == std::vector<plan::ScheduleKind>{plan::ScheduleKind::one_f_one_b, plan::ScheduleKind::gpipe});
  CHECK(h.max_pipeline_depth == 2);
  CHECK(h.exclude_devices == std::vector<int>{6, 7});
}

TEST_CASE("bad and contradictory hints are named with the reason") {
  const plan::Cluster cl = test::shipped_cluster("cpu-local-8");
  const plan::Model tiny = test::shipped_model("tiny");  // 10 layers, 4 heads
  std::string m = hint_error("h1.yaml", "layers:\n  - {range: [0, 4], tp: 2}\n  - {range: [3, 6], tp: 4}\n", cl, tiny);
  CHECK(m.find("h1.yaml") != std::string::npos);
  CHECK(m.find("layers[1]") != std::string::npos);
  CHECK(m.find("contradicts layers[0] on layers 3-4") != std::string::npos);

  m = hint_error("h2.yaml", "stage_boundaries: [0, 2, 4, 6]\nmax_pipeline_depth: 2\nschedules: [1f1b]\n", cl, tiny);
  CHECK(m.find("h2.yaml: stage_boundaries: 4 stages contradict max_pipeline_depth 2") != std::string::npos);

  m = hint_error("h3.yaml", "layers:\n  - {range: [0, 40], tp: 2}\n", cl, tiny);
  CHECK(m.find("layers[0].range: layer 40 does not exist") != std::string::npos);

  m = hint_error("h4.yaml", "layers:\n  - {range: [0, 1], tp: 3}\n", cl, tiny);
  CHECK(m.find("layers[0].tp: tp 3 must be a power of two") != std::string::npos);

  // tiny-llama's 4 heads split at tp 4, its 2 key-value heads do not.
  m = hint_error("h4b.yaml", "layers:\n  - {range: [0, 1], tp: 4}\n", cl, test::shipped_model("tiny-llama"));
  CHECK(m.find("layers[0].tp: tp 4 does not divide the model's 2 kv_heads") != std::string::npos);

  m = hint_error("h5.yaml", "exclude_devices: \"0-7\"\n", cl, tiny);
  CHECK(m.find("h5.yaml: exclude_devices: every device of the cluster is excluded") != std::string::npos);

  m = hint_error("h6.yaml", "schedules: [zigzag]\n", cl, tiny);
  CHECK(m.find("h6.yaml") != std::string::npos);
  CHECK(m.find("schedules[0]") != std::string::npos);

  m = hint_error("h7.yaml", "stage_boundaries: [0, 3, 2]\n", cl, tiny);
  CHECK(m.find("stage_boundaries[2]: expected ascending first layers") != std::string::npos);
}

TEST_CASE("the planner honours every hint") {
  const plan::Cluster cl = test::shipped_cluster("cpu-local-8");
  const plan::Model tiny = test::shipped_model("tiny");
  const sim::Simulator simulator;
  plan::PlannerOptions o;
  o.global_batch = 16;
  o.compare = false;
  o.hints = plan::load_hints(test::temp_file("honour.yaml", R"(layers:
  - {range: [0, 4], tp: 2}
stage_boundaries: [0, 5]
schedules: [gpipe]
exclude_devices: [7]
)"));
  const plan::PlanResult r = plan::search_plans(cl, tiny, simulator, o);
  const plan::Plan& p = r.best().plan;
  REQUIRE(p.stages.size() == 2);
  CHECK(p.stages[0].first_layer == 0);
  CHECK(p.stages[1].first_layer == 5);
  CHECK(p.stages[0].tp == 2);
  CHECK(p.schedule.kind == plan::ScheduleKind::gpipe);
  for (const plan::Stage& s : p.stages) {
    for (int d : s.devices) CHECK(d != 7);
  }
  CHECK_NOTHROW(plan::validate_plan(p));
}

TEST_CASE("a hint no plan can meet is named") {
  // dp 8 on one layer range needs all 8 devices in one group at tp 1, but the fixed boundaries
  // make two stages, each on its own group of at most 4 devices.
  const plan::Cluster cl = test::shipped_cluster("cpu-local-8");
  const plan::Model tiny = test::shipped_model("tiny");
  const sim::Simulator simulator;
  plan::PlannerOptions o;
  o.global_batch = 16;
  o.compare = false;
  o.hints = plan::load_hints(test::temp_file("unmeetable.yaml", "layers:\n  - {range: [0, 2], dp: 8}\nstage_boundaries: [0, 5]\nschedules: [1f1b]\n"));
  try {
    plan::search_plans(cl, tiny, simulator, o);
    FAIL("expected an error");
  } catch (const Error& e) {
    const std::string m = e.what();
    CHECK(m.find("unmeetable.yaml: layers[0]: dp 8 on layers 0-2 cannot be met") != std::string::npos);
  }
}

TEST_CASE("schedules that no pipeline can run at the batch are named, with what they need") {
  // The tiny Llama on cpu-local-4 at 3 samples, interleaved 1F1B only: at 2 groups each has dp 2
  // (one micro-batch of 3 samples, not a multiple of 2), at 4 groups dp 1 (1 or 3 micro-batches,
  // neither a multiple of 4), and the near-equal 3 groups have a group of dp 2 again. Nor on
  // fewer devices: two groups need an even micro-batch count, three or more need more stages
  // (two chunks each) than its 4 layers.
  const sim::Simulator simulator;
  plan::PlannerOptions o;
  o.global_batch = 3;
  o.hints = plan::load_hints(test::temp_file("interleaved-only.yaml", "schedules: [interleaved-1f1b]\n"));
  try {
    plan::search_plans(test::shipped_cluster("cpu-local-4"), test::shipped_model("tiny-llama"), simulator, o);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.yaml_path() == "schedules");
    CHECK(std::string(e.what()).find("interleaved-only.yaml: schedules: a pipeline of the usable devices that runs "
                                     "interleaved-1f1b at the global batch of 3 sample(s); none does") !=
          std::string::npos);
    CHECK(e.hint().find("allow 1f1b, zb-h1 or gpipe too") != std::string::npos);
  }
  // With 1f1b allowed too the same batch plans.
  o.hints = plan::load_hints(test::temp_file("interleaved-or-1f1b.yaml", "schedules: [interleaved-1f1b, 1f1b]\n"));
  CHECK_NOTHROW(plan::search_plans(test::shipped_cluster("cpu-local-4"), test::shipped_model("tiny-llama"), simulator, o));
}

TEST_CASE("hints that rule out every plan on all devices are met on fewer, the rest idle with the reason") {
  // A GPT of 3 blocks (5 layers) on cpu-local-8 at 6 samples, interleaved 1F1B (2 chunks) with
  // tp 1 on every layer. On 8 devices at tp 1 two groups have dp 4 (6 samples give no equal
  // micro-batch count that is a multiple of 2 to 4 replicas) and four groups need 8 stages of
  // 5 layers; so every plan on all 8 breaks the tp hint. On the first 6 devices two groups of
  // dp 3 run 2 micro-batches of one sample per replica: 4 stages, interleaved.
  const plan::Cluster cl = test::shipped_cluster("cpu-local-8");
  const plan::Model gpt3 = plan::load_model(test::temp_file(
      "three-blocks.yaml", "name: three-blocks\nfamily: gpt\nlayers: 3\nhidden: 64\nheads: 4\nffn_hidden: 256\n"
                           "sequence: 32\nvocabulary: 256\ntraining: {global_batch: 6, precision: fp32}\n"));
  const sim::Simulator simulator;
  plan::PlannerOptions o;
  o.hints = plan::load_hints(test::temp_file("interleaved-tp1.yaml", "schedules: [interleaved-1f1b]\n"
                                                                       "layers:\n  - {range: [0, 4], tp: 1}\n"));
  const plan::PlanResult r = plan::search_plans(cl, gpt3, simulator, o);
  const plan::Plan& p = r.best().plan;
  CHECK(p.schedule.kind == plan::ScheduleKind::interleaved_1f1b);
  REQUIRE(p.stages.size() == 4);
  CHECK(p.stages[0].devices == std::vector<int>{0, 1, 2});
  CHECK(p.stages[1].devices == std::vector<int>{3, 4, 5});
  for (const plan::Stage& s : p.stages) CHECK(s.tp == 1);
  CHECK(p.micro_batches == 2);
  CHECK_NOTHROW(plan::validate_plan(p));
  REQUIRE(r.idle.size() == 1);
  CHECK(r.idle[0].devices == std::vector<int>{6, 7});
  CHECK(r.idle[0].reason == "the hints rule out every plan on all 8 usable devices (every plan that fits in "
                            "memory breaks the hinted tp 1 on layers 0-4); the best plan found on fewer leaves these idle");
  // Turned off, the hint is named as before.
  o.idle_devices_for_hints = false;
  try {
    plan::search_plans(cl, gpt3, simulator, o);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("interleaved-tp1.yaml: layers[0]: tp 1 on layers 0-4 cannot be met") !=
          std::string::npos);
  }
}

TEST_CASE("a schedule hint no pipeline of all devices runs is run on fewer") {
  // A GPT of 3 blocks and 3 heads (tp 1 only: a degree must be a power of two dividing the
  // heads) on cpu-local-8 at 6 samples, interleaved 1F1B only. On 8 devices two groups have dp
  // 4 (no equal even micro-batch count for 6 samples) and more groups need more stages than
  // its 5 layers: no pipeline runs it. On the first 6 two groups of dp 3 run 2 micro-batches.
  const plan::Model gpt3 = plan::load_model(test::temp_file(
      "three-heads.yaml", "name: three-heads\nfamily: gpt\nlayers: 3\nhidden: 48\nheads: 3\nffn_hidden: 192\n"
                          "sequence: 32\nvocabulary: 256\ntraining: {global_batch: 6, precision: fp32}\n"));
  const sim::Simulator simulator;
  plan::PlannerOptions o;
  o.hints = plan::load_hints(test::temp_file("interleaved-only-8.yaml", "schedules: [interleaved-1f1b]\n"));
  const plan::PlanResult r = plan::search_plans(test::shipped_cluster("cpu-local-8"), gpt3, simulator, o);
  const plan::Plan& p = r.best().plan;
  CHECK(p.schedule.kind == plan::ScheduleKind::interleaved_1f1b);
  REQUIRE(p.stages.size() == 4);
  CHECK(p.stages[0].devices == std::vector<int>{0, 1, 2});
  CHECK(p.stages[1].devices == std::vector<int>{3, 4, 5});
  CHECK(p.micro_batches == 2);
  REQUIRE(r.idle.size() == 1);
  CHECK(r.idle[0].devices == std::vector<int>{6, 7});
  CHECK(r.idle[0].reason == "the hints rule out every plan on all 8 usable devices (no pipeline runs the hinted "
                            "schedules (interleaved-1f1b) at the global batch of 6 sample(s)); the best plan found on "
                            "fewer leaves these idle");
  // At 4 samples two groups of dp 2 on the first 4 devices (dp 3 would split 4 samples unevenly).
  o.global_batch = 4;
  const plan::PlanResult four = plan::search_plans(test::shipped_cluster("cpu-local-8"), gpt3, simulator, o);
  REQUIRE(four.idle.size() == 1);
  CHECK(four.idle[0].devices == std::vector<int>{4, 5, 6, 7});
}

TEST_CASE("a search on fewer devices for the hints that the time limit cuts says so") {
  // The 3-head GPT above with interleaved 1F1B only: its plan is found on fewer devices. A fake
  // clock stands still for the first `cut_at` readings and then jumps past the limit; at every
  // cut point the planner still returns a plan (it stops only once one is found), and a plan
  // other than the uncut search's comes with stats.timed_out.
  const plan::Model gpt3 = plan::load_model(test::temp_file(
      "three-heads-cut.yaml", "name: three-heads\nfamily: gpt\nlayers: 3\nhidden: 48\nheads: 3\nffn_hidden: 192\n"
                              "sequence: 32\nvocabulary: 256\ntraining: {global_batch: 6, precision: fp32}\n"));
  const plan::Cluster cl = test::shipped_cluster("cpu-local-8");
  const sim::Simulator simulator;
  plan::PlannerOptions o;
  o.hints = plan::load_hints(test::temp_file("interleaved-only-cut.yaml", "schedules: [interleaved-1f1b]\n"));
  o.threads = 1;   // a fake clock need not be thread-safe
  o.time_limit_s = 1.0;
  auto readings = std::make_shared<long>(0);
  o.clock_s = [readings] {
    ++*readings;
    return 0.0;
  };
  const plan::PlanResult uncut = plan::search_plans(cl, gpt3, simulator, o);
  CHECK_FALSE(uncut.stats.timed_out);
  REQUIRE(uncut.idle.size() == 1);
  const long total = *readings;
  REQUIRE(total > 2);
  long cut_seen = 0;
  for (long cut_at = 1; cut_at < total; cut_at += std::max(1L, total / 40)) {
    CAPTURE(cut_at);
    auto seen = std::make_shared<long>(0);
    o.clock_s = [seen, cut_at] { return (*seen)++ < cut_at ? 0.0 : 1e9; };
    const plan::PlanResult r = plan::search_plans(cl, gpt3, simulator, o);
    const bool other_plan = r.best().label != uncut.best().label || r.idle.size() != uncut.idle.size() ||
                            r.idle[0].devices != uncut.idle[0].devices;
    if (other_plan) CHECK(r.stats.timed_out);
    if (r.stats.timed_out) ++cut_seen;
  }
  CHECK(cut_seen > 0);   // the first cut point stops the counts after the first with a plan
}

// File: test_search_estimate_overlap.cpp
// How much of a pipeline's gradient reduction and sends the quick estimate lets hide under
// compute, by schedule, against the simulator: under zb-h1 only the last micro-batch's weight pass (the
// simulator's buckets wait for it), so a slow reduction is mostly exposed; under
// interleaved-1f1b each chunk's reduction starts once its own last backward is done, long
// before the group's last, so most of it hides. The estimate let every schedule hide its
// reduction under one backward: it put zb-h1 pipelines of GPT-3 1.3B on 768 GPUs at 0.62 of
// their simulated step and interleaved Mixtral pipelines at 1.09, and the search simulated
// the wrong ones. And a pipeline runs no faster than p micro-batches per round trip through
// its stages and links.
#include <doctest/doctest.h>

#include "planner_fixtures.h"
#include "whale/plan/plan.h"

using namespace whale;

namespace {

// Four nodes of two A100s each, joined by Ethernet of `gbps`: a pipeline of two groups of two
// nodes reduces GPT-2 124M's gradients across the slow network.
plan::Cluster four_pairs_of_a100(int gbps = 25) {
  std::string nodes;
  for (const char* name : {"a", "b", "c", "d"}) {
    nodes += std::string("  - name: ") + name + "\n    devices: [{model: a100-sxm4-80gb, count: 2}]\n" +
             "    intra_link: {kind: nvlink, bandwidth_gbps: 2400, latency_us: 3}\n" +
             "    network: {kind: ethernet, bandwidth_gbps: " + std::to_string(gbps) + ", latency_us: 5}\n";
  }
  return plan::load_cluster(test::temp_file("four_pairs_of_a100_" + std::to_string(gbps) + ".yaml",
                                            "name: four-pairs\nnodes:\n" + nodes));
}

struct Laid {
  plan::Layout layout;
  plan::Plan plan;
};

// The two-group pipeline of tp 1 and 4 replicas a group, at `micro_batches` of `global / m`
// samples under `kind` with `chunks`.
Laid lay_out(const plan::Cluster& cluster, const plan::Model& model, int global, plan::ScheduleKind kind, int chunks,
             int micro_batches) {
  const plan::SpaceLimits limits = test::every_device(cluster);
  plan::AnalyticModel analytic(cluster, model);
  for (const plan::Structure& s : plan::enumerate_structures(cluster, model, limits)) {
    if (s.groups.size() != 2 || s.groups[0]->tp != 1 || s.groups[0]->dp() != 4 || s.groups[1]->tp != 1) continue;
    for (const plan::Choice& c : plan::enumerate_choices(s, model, global, limits)) {
      if (c.schedule.kind != kind || c.schedule.chunks != chunks || c.micro_batches != micro_batches) continue;
      Laid out{plan::build_layout(analytic, s, c, plan::LayoutRules{}), {}};
      out.plan.cluster = cluster;
      out.plan.model = model;
      plan::apply_layout(out.plan, c, out.layout);
      return out;
    }
  }
  FAIL("no such pipeline");
  return {};
}

double simulated_s(const plan::Plan& plan) { return sim::Simulator().evaluate(plan, plan::EvaluateOptions{}).step_time_s; }

}  // namespace

TEST_CASE("under zb-h1 a slow reduction is exposed but for the last weight pass") {
  const plan::Cluster cluster = four_pairs_of_a100();
  const plan::Model model = test::shipped_model("gpt2-124m");
  for (int m : {1, 2}) {
    CAPTURE(m);
    const Laid zb = lay_out(cluster, model, 8, plan::ScheduleKind::zb_h1, 1, m);
    REQUIRE(zb.layout.fits);
    const double simulated = simulated_s(zb.plan);
    CAPTURE(zb.layout.estimate_s);
    CAPTURE(simulated);
    CHECK(zb.layout.estimate_s == doctest::Approx(simulated).epsilon(0.15));
  }
}

TEST_CASE("under interleaved-1f1b each chunk's reduction hides under the backward after it") {
  const plan::Cluster cluster = four_pairs_of_a100();
  const plan::Model model = test::shipped_model("gpt2-124m");
  const Laid interleaved = lay_out(cluster, model, 32, plan::ScheduleKind::interleaved_1f1b, 2, 8);
  REQUIRE(interleaved.layout.fits);
  const double simulated = simulated_s(interleaved.plan);
  CAPTURE(interleaved.layout.estimate_s);
  CAPTURE(simulated);
  CHECK(interleaved.layout.estimate_s == doctest::Approx(simulated).epsilon(0.15));
}

TEST_CASE("under 1F1B a pipeline over a slow link runs p micro-batches per round trip at best") {
  // 5 Gb/s: a micro-batch's activations between the groups take about as long as a stage's
  // compute, so neither alone sets the pace: each micro-batch goes forward through both
  // stages and the link and back before the one p = 2 after it may start.
  const plan::Cluster cluster = four_pairs_of_a100(5);
  const plan::Model model = test::shipped_model("gpt2-124m");
  const Laid one_f_one_b = lay_out(cluster, model, 32, plan::ScheduleKind::one_f_one_b, 1, 8);
  REQUIRE(one_f_one_b.layout.fits);
  const double simulated = simulated_s(one_f_one_b.plan);
  CAPTURE(one_f_one_b.layout.estimate_s);
  CAPTURE(simulated);
  // Without the round trip the estimate was 0.341 s against 0.372 simulated (8% low); now 1%.
  CHECK(one_f_one_b.layout.estimate_s == doctest::Approx(simulated).epsilon(0.05));
}

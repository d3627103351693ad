// File: test_search_estimate_sends.cpp
// The quick estimate of a pipeline whose link is slower than its compute: each replica sends
// its micro-batches' activations forward and gradients backward on one stream (as the
// simulator does), so the steady state runs at one micro-batch per send time at best, and the
// estimate counts that (it counted one micro-batch's sends, as if the rest hid under compute:
// a third of the simulated step for GPT-3 1.3B over 10 Gb/s Ethernet, and the search ranked
// such pipelines above data parallelism).
#include <doctest/doctest.h>

#include "planner_fixtures.h"
#include "whale/plan/plan.h"

using namespace whale;

namespace {

// Two nodes of one A100 each, joined by a network of `gbps`.
plan::Cluster two_single_a100_nodes(const std::string& kind, double gbps) {
  std::string nodes;
  for (const char* name : {"a", "b"}) {
    nodes += std::string("  - name: ") + name + "\n    devices: [{model: a100-sxm4-80gb, count: 1}]\n" +
             "    intra_link: {kind: nvlink, bandwidth_gbps: 2400, latency_us: 3}\n" +
             "    network: {kind: " + kind + ", bandwidth_gbps: " + std::to_string(gbps) + ", latency_us: 5}\n";
  }
  return plan::load_cluster(
      test::temp_file("two_single_a100_" + kind + ".yaml", "name: two-single-a100\nnodes:\n" + nodes));
}

struct PipelineOfTwo {
  plan::Layout layout;
  plan::Choice choice;
  plan::Plan plan;
  double send_s = 0;   // one sample's activations over the link between the two stages
};

// The two-stage pipeline (one A100 a stage) at one sample a micro-batch, 8 micro-batches, 1F1B.
PipelineOfTwo lay_out_pipeline(const plan::Cluster& cluster, const plan::Model& model) {
  const plan::SpaceLimits limits = test::every_device(cluster);
  plan::AnalyticModel analytic(cluster, model);
  for (const plan::Structure& s : plan::enumerate_structures(cluster, model, limits)) {
    if (s.groups.size() != 2) continue;
    for (const plan::Choice& c : plan::enumerate_choices(s, model, 8, limits)) {
      if (c.micro_batch_size != 1 || c.schedule.kind != plan::ScheduleKind::one_f_one_b) continue;
      PipelineOfTwo out{plan::build_layout(analytic, s, c, plan::LayoutRules{}), c, {}};
      out.plan.cluster = cluster;
      out.plan.model = model;
      plan::apply_layout(out.plan, c, out.layout);
      const Bytes boundary = analytic.boundary_bytes(out.layout.stages[0].end_layer);
      out.send_s = cluster.concurrent_link_between(0, 1).time_for(boundary);
      return out;
    }
  }
  FAIL("no two-stage pipeline at one sample a micro-batch");
  return {};
}

}  // namespace

TEST_CASE("a pipeline over a slow link is estimated at one micro-batch per send time at best") {
  const plan::Model model = test::shipped_model("gpt2-124m");
  // 1 Gb/s Ethernet: one sample's activations (1024 tokens x 768 x 2 bytes, 1.57 MB) take 12.6 ms
  // each way, about five times the compute of a half of GPT-2 124M on one sample.
  const plan::Cluster slow = two_single_a100_nodes("ethernet", 1);
  const PipelineOfTwo p = lay_out_pipeline(slow, model);
  REQUIRE(p.layout.fits);
  REQUIRE(p.choice.micro_batches == 8);
  const double send_s = p.send_s;
  CAPTURE(send_s);
  CAPTURE(p.layout.estimate_s);
  CHECK(send_s == doctest::Approx(5e-6 + 1024.0 * 768 * 2 / 0.125e9).epsilon(1e-9));
  // Each of 8 micro-batches leaves stage 0 once (forward) and stage 1 once (backward); both
  // ends' first and last sends (2 x send_s) are the fill and drain the estimate counted before.
  CHECK(p.layout.estimate_s >= 8 * send_s + 2 * send_s);
  // And the simulator agrees on the order of it (it was 3 times the estimate of one send's fill).
  const plan::Estimate simulated = sim::Simulator().evaluate(p.plan, plan::EvaluateOptions{});
  CAPTURE(simulated.step_time_s);
  CHECK(p.layout.estimate_s == doctest::Approx(simulated.step_time_s).epsilon(0.25));
}

TEST_CASE("over a fast link the sends hide under compute and leave the estimate as it was") {
  const plan::Model model = test::shipped_model("gpt2-124m");
  // 200 Gb/s InfiniBand: a send takes 63 us, far below a micro-batch's compute.
  const plan::Cluster fast = two_single_a100_nodes("infiniband", 200);
  const PipelineOfTwo p = lay_out_pipeline(fast, model);
  REQUIRE(p.layout.fits);
  const double send_s = p.send_s;
  CAPTURE(send_s);
  CAPTURE(p.layout.estimate_s);
  CHECK(8 * send_s < 0.05 * p.layout.estimate_s);
  const plan::Estimate simulated = sim::Simulator().evaluate(p.plan, plan::EvaluateOptions{});
  CHECK(p.layout.estimate_s == doctest::Approx(simulated.step_time_s).epsilon(0.25));
}

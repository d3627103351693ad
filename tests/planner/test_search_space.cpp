// File: test_search_space.cpp
// The search space: big-memory devices first with nodes kept together, the structures of a
// small cluster, and the micro-batch and schedule choices.
#include <doctest/doctest.h>

#include <algorithm>

#include "planner_fixtures.h"
#include "whale/plan/limits.h"
#include "whale/plan/schedule_analysis.h"
#include "whale/plan/schedule_program.h"

using namespace whale;

TEST_CASE("device order puts big-memory nodes first and keeps nodes together") {
  // The 16 GB V100 node comes first in the file; the 80 GB A100 node must lead.
  const plan::Cluster cl = plan::load_cluster(test::temp_file("order.yaml", R"(name: order
nodes:
  - name: small
    devices: [{model: v100-sxm2-16gb, count: 2}]
    intra_link: {kind: nvlink, bandwidth_gbps: 2400, latency_us: 3}
    network: {kind: infiniband, bandwidth_gbps: 100, latency_us: 5}
  - name: big
    devices: [{model: a100-sxm4-80gb, count: 2}]
    intra_link: {kind: nvlink, bandwidth_gbps: 4800, latency_us: 3}
    network: {kind: infiniband, bandwidth_gbps: 200, latency_us: 5}
)"));
  CHECK(plan::ordered_devices(cl, {0, 1, 2, 3}, plan::Precision::bf16) == std::vector<int>{2, 3, 0, 1});
  CHECK(plan::ordered_devices(cl, {0, 2}, plan::Precision::bf16) == std::vector<int>{2, 0});
}

TEST_CASE("structures of four CPU devices and the tiny model") {
  const plan::Cluster cl = test::shipped_cluster("cpu-local-4");
  const plan::Model tiny = test::shipped_model("tiny");  // 4 heads
  plan::SpaceLimits limits;
  limits.devices = {0, 1, 2, 3};
  std::vector<std::string> got;
  for (const plan::Structure& s : plan::enumerate_structures(cl, tiny, limits)) {
    std::string g;
    for (const plan::SharedGroup& grp : s.groups) g += "[" + plan::format_device_list(grp->devices) + " tp" + std::to_string(grp->tp) + "]";
    got.push_back(g);
  }
  // p = 1 (tp 1, 2, 4), p = 2 (tp 1, 2), p = 3 near-equal (2+1+1 devices: tp 1, and tp 2 on
  // the two-device group), p = 4 (tp 1).
  CHECK(got == std::vector<std::string>{"[0-3 tp1]", "[0-3 tp2]", "[0-3 tp4]", "[0-1 tp1][2-3 tp1]",
                                        "[0-1 tp2][2-3 tp2]", "[0-1 tp1][2 tp1][3 tp1]", "[0-1 tp2][2 tp1][3 tp1]",
                                        "[0 tp1][1 tp1][2 tp1][3 tp1]"});
  limits.max_pipeline_depth = 1;
  CHECK(plan::enumerate_structures(cl, tiny, limits).size() == 3);
}

TEST_CASE("tensor-parallel degrees split the key-value heads, the MLP width and the vocabulary too") {
  // tiny-llama: 4 heads, 2 key-value heads, ffn_hidden 176 = 16 x 11. On four devices of one
  // node tp 4 would split the 4 heads but not the 2 key-value groups (Megatron-LM asserts
  // both): the structures and the baseline's uniform ones stop at tp 2.
  const plan::Cluster cl = test::shipped_cluster("cpu-local-4");
  plan::Model llama = test::shipped_model("tiny-llama");
  plan::SpaceLimits limits;
  limits.devices = {0, 1, 2, 3};
  limits.max_pipeline_depth = 1;
  auto degrees = [&](const std::vector<plan::Structure>& structures) {
    std::vector<int> tp;
    for (const plan::Structure& s : structures) tp.push_back(s.groups.front()->tp);
    return tp;
  };
  CHECK(degrees(plan::enumerate_structures(cl, llama, limits)) == std::vector<int>{1, 2});
  // The baseline's: pp 1 and pp 2 (two blocks at most), each at tp 1 and 2.
  CHECK(degrees(plan::uniform_structures(cl, llama, limits.devices)) == std::vector<int>{1, 2, 1, 2});
  CHECK(plan::tp_split_failure(llama, 4) == "tp 4 does not divide the model's 2 kv_heads");
  llama.kv_heads = 4;
  CHECK(degrees(plan::enumerate_structures(cl, llama, limits)) == std::vector<int>{1, 2, 4});
  llama.ffn_hidden = 174;   // 2 x 87
  CHECK(degrees(plan::enumerate_structures(cl, llama, limits)) == std::vector<int>{1, 2});
  CHECK(plan::tp_split_failure(llama, 4) == "tp 4 does not divide the model's 174 ffn_hidden");
  CHECK(plan::tp_split_failure(llama, 2).empty());
  // Every tensor rank holds rows of the vocabulary-parallel token table and head: a vocabulary
  // of one token takes tp 1 only (whale-sim refuses a plan above it).
  llama.vocabulary = 1;
  CHECK(degrees(plan::enumerate_structures(cl, llama, limits)) == std::vector<int>{1});
  CHECK(degrees(plan::uniform_structures(cl, llama, limits.devices)) == std::vector<int>{1, 1});
  CHECK(plan::tp_split_failure(llama, 2) == "tp 2 exceeds the model's vocabulary of 1 tokens");
}

TEST_CASE("a degree the devices cannot all take is also laid on its whole replicas, the rest idle") {
  // Four A100s in one node and two in another: at tp 4 the six devices make one replica inside
  // a node and two left over. Besides tp 1 and 2 on all six (tp 4 falls back to tp 2, the same
  // structure), the pipeline of the one tp 4 replica, devices 4 and 5 idle.
  const plan::Cluster cl = test::four_and_two_nodes("a100-sxm4-80gb");
  const plan::Model tiny = test::shipped_model("tiny");  // 4 heads
  plan::SpaceLimits limits;
  limits.devices = {0, 1, 2, 3, 4, 5};
  limits.max_pipeline_depth = 1;
  std::vector<std::string> got;
  for (const plan::Structure& s : plan::enumerate_structures(cl, tiny, limits)) {
    got.push_back(s.label + " [" + plan::format_device_list(s.groups.front()->devices) + " tp" +
                  std::to_string(s.groups.front()->tp) + "]");
  }
  CHECK(got == std::vector<std::string>{"p1 tp[a100-sxm4-80gb:1] [0-5 tp1]", "p1 tp[a100-sxm4-80gb:2] [0-5 tp2]",
                                        "p1 tp[a100-sxm4-80gb:4] (2 devices idle) [0-3 tp4]"});
}

TEST_CASE("type-pure pipelines are laid in every order of the device models") {
  // 4 A100-80GB (ids 0-3) and 4 V100-32GB (4-7): at depth 2 the type-pure pipelines
  // [a100][v100] (memory order) and [v100][a100] both appear, at every tp.
  const plan::Cluster cl = plan::load_cluster(test::temp_file("two_models.yaml", test::kTwoNodeMix));
  const plan::Model tiny = test::shipped_model("tiny");  // 4 heads
  plan::SpaceLimits limits;
  limits.devices = {0, 1, 2, 3, 4, 5, 6, 7};
  limits.max_pipeline_depth = 2;
  std::vector<std::string> got;
  for (const plan::Structure& s : plan::enumerate_structures(cl, tiny, limits)) {
    if (s.groups.size() != 2 || s.groups[0]->tp != 1 || s.groups[1]->tp != 1) continue;
    std::string g;
    for (const plan::SharedGroup& grp : s.groups) g += "[" + plan::format_device_list(grp->devices) + "]";
    got.push_back(g);
  }
  // Equal slices (= type-pure in memory order), striped, then type-pure in the other order.
  CHECK(got == std::vector<std::string>{"[0-3][4-7]", "[0-1,4-5][2-3,6-7]", "[4-7][0-3]"});
}

TEST_CASE("pipelines that differ only in where their groups are cut are both listed") {
  // mixed-node: 4 RTX 3090 (ids 0-3) and 4 A10 (4-7) in one node, the A10s first in bf16.
  // At depth 3 and tp 1 the near-equal slices [4-6][7,0-1][2-3] and the type-pure
  // [4-7][0-1][2-3] lay the devices in the same order; a hash of the groups once took the
  // second for the first and left it out.
  const plan::Cluster cl = test::shipped_cluster("mixed-node");
  const plan::Model model = test::shipped_model("gpt3-1.3b");
  plan::SpaceLimits limits;
  for (const plan::Device& d : cl.devices) limits.devices.push_back(d.id);
  limits.max_pipeline_depth = 3;
  std::vector<std::string> got;
  for (const plan::Structure& s : plan::enumerate_structures(cl, model, limits)) {
    if (s.groups.size() != 3 || s.groups[0]->tp != 1 || s.groups[1]->tp != 1 || s.groups[2]->tp != 1) continue;
    std::string g;
    for (const plan::SharedGroup& grp : s.groups) g += "[" + plan::format_device_list(grp->devices) + "]";
    got.push_back(g);
  }
  CHECK(std::count(got.begin(), got.end(), "[4-6][7,0-1][2-3]") == 1);
  CHECK(std::count(got.begin(), got.end(), "[4-7][0-1][2-3]") == 1);
}

TEST_CASE("choices: micro-batch sizes at least dp, schedules by depth") {
  const plan::Cluster cl = test::shipped_cluster("cpu-local-4");
  const plan::Model tiny = test::shipped_model("tiny");  // 10 layers
  plan::SpaceLimits limits;
  limits.devices = {0, 1, 2, 3};
  const auto structures = plan::enumerate_structures(cl, tiny, limits);
  // One group of 4 at tp 1: b in {4, 8} for a batch of 8, 1f1b only.
  const auto one = plan::enumerate_choices(structures[0], tiny, 8, limits);
  REQUIRE(one.size() == 2);
  CHECK(one[0].micro_batch_size == 4);
  CHECK(one[0].micro_batches == 2);
  CHECK(one[1].micro_batch_size == 8);
  // Two groups of 2 at tp 1, batch 8: b = 2 (m 4), 4 (m 2), 8 (m 1); 1f1b, gpipe and zb-h1
  // always, wave with 2 and 4 chunks (2 * chunks <= 10 layers), interleaved too when m % 2 == 0.
  const auto two = plan::enumerate_choices(structures[3], tiny, 8, limits);
  CHECK(two.size() == 9 + 6 + 4);
  int zb_h1 = 0;
  for (const plan::Choice& c : two) zb_h1 += c.schedule.kind == plan::ScheduleKind::zb_h1;
  CHECK(zb_h1 == 3);
  limits.schedules = {plan::ScheduleKind::wave};
  for (const plan::Choice& c : plan::enumerate_choices(structures[3], tiny, 8, limits)) {
    CHECK(c.schedule.kind == plan::ScheduleKind::wave);
  }
  // zb-h1 alone also serves one group (where it runs as 1f1b with split backwards).
  limits.schedules = {plan::ScheduleKind::zb_h1};
  const auto zb_one = plan::enumerate_choices(structures[0], tiny, 8, limits);
  REQUIRE(zb_one.size() == 2);
  for (const plan::Choice& c : zb_one) CHECK(c.schedule.kind == plan::ScheduleKind::zb_h1);
}

TEST_CASE("choices hold at most the micro-batches a plan may hold") {
  const plan::Cluster cl = test::shipped_cluster("cpu-local-4");
  const plan::Model tiny = test::shipped_model("tiny");
  plan::SpaceLimits limits;
  limits.devices = {0, 1, 2, 3};
  const auto structures = plan::enumerate_structures(cl, tiny, limits);
  // The largest batch accepted over one group of 4: sizes 4 .. 2^24; 2^24 / 4 = 2^22
  // micro-batches is past the limit, 2^24 / 2^8 = 2^16 is the most allowed.
  const auto choices = plan::enumerate_choices(structures[0], tiny, static_cast<int>(plan::kMaxGlobalBatch), limits);
  REQUIRE_FALSE(choices.empty());
  int most = 0;
  for (const plan::Choice& c : choices) most = std::max(most, c.micro_batches);
  CHECK(most == plan::kMaxMicroBatches);
  CHECK(choices.front().micro_batch_size == 256);
}

TEST_CASE("choices: wave with a micro-batch count that the pipeline depth does not divide") {
  const plan::Cluster cl = test::shipped_cluster("cpu-local-4");
  const plan::Model tiny = test::shipped_model("tiny");  // 10 layers
  plan::SpaceLimits limits;
  limits.devices = {0, 1, 2, 3};
  const auto structures = plan::enumerate_structures(cl, tiny, limits);
  REQUIRE(structures[3].groups.size() == 2);
  // Batch 6 over two groups of 2: b = 2 (m 3), 3 (m 2) and 6 (m 1). Waves of 2 and 4 chunks at
  // all three; interleaved-1f1b at m 2 only (it needs m % 2 == 0).
  std::vector<std::pair<int, int>> waves;  // (m, chunks)
  for (const plan::Choice& c : plan::enumerate_choices(structures[3], tiny, 6, limits)) {
    if (c.schedule.kind == plan::ScheduleKind::interleaved_1f1b) CHECK(c.micro_batches == 2);
    if (c.schedule.kind == plan::ScheduleKind::wave) waves.push_back({c.micro_batches, c.schedule.chunks});
  }
  CHECK(waves == std::vector<std::pair<int, int>>{{3, 2}, {3, 4}, {2, 2}, {2, 4}, {1, 2}, {1, 4}});
  // At batch 3 every micro-batch count is odd (3 or 1): the planner restricted to waves still
  // finds plans, each with a valid program.
  const sim::Simulator simulator;
  plan::PlannerOptions options;
  options.global_batch = 3;
  options.compare = false;
  options.hints.schedules = {plan::ScheduleKind::wave};
  const plan::PlanResult r = plan::search_plans(cl, tiny, simulator, options);
  for (const plan::RankedPlan& p : r.ranked) {
    CHECK(p.plan.schedule.kind == plan::ScheduleKind::wave);
    CHECK(p.plan.micro_batches % 2 == 1);
    CHECK_NOTHROW(plan::check_schedule(plan::generate_schedule(p.plan)));
  }
}

// The labels and device groups of `structures`, one string each, for comparing lists.
static std::vector<std::string> describe(const std::vector<plan::Structure>& structures) {
  std::vector<std::string> out;
  for (const plan::Structure& s : structures) {
    std::string text = s.label;
    for (const plan::SharedGroup& g : s.groups) text += " [" + plan::format_device_list(g->devices) + " tp" + std::to_string(g->tp) + "]";
    out.push_back(text);
  }
  return out;
}

TEST_CASE("an enumeration told to stop returns a non-empty prefix of the full list, asking every 1024 builds") {
  // GPT-3 175B on the 1,024 GPUs of four models: more than 2 x 1024 groupings and structures.
  const plan::Cluster cl = test::shipped_cluster("mixed-1024");
  const plan::Model m = test::shipped_model("gpt3-175b");
  plan::SpaceLimits limits;
  for (const plan::Device& d : cl.devices) limits.devices.push_back(d.id);
  long asks = 0;
  const std::vector<std::string> full = describe(plan::enumerate_structures(cl, m, limits, nullptr, [&] {
    ++asks;
    return false;
  }));
  REQUIRE(asks >= 2);
  CHECK(full == describe(plan::enumerate_structures(cl, m, limits)));  // asking changes nothing
  // Stopped at the first ask (after 1024 builds) or the second: prefixes, the first shorter.
  for (long stop_at : {1L, 2L}) {
    CAPTURE(stop_at);
    long asked = 0;
    const std::vector<std::string> cut = describe(plan::enumerate_structures(cl, m, limits, nullptr, [&] {
      return ++asked == stop_at;
    }));
    CHECK(asked == stop_at);
    REQUIRE_FALSE(cut.empty());
    REQUIRE(cut.size() < full.size());
    CHECK(std::equal(cut.begin(), cut.end(), full.begin()));
    if (stop_at == 2) CHECK(cut.size() > describe(plan::enumerate_structures(cl, m, limits, nullptr, [] { return true; })).size());
  }
}

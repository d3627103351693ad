// File: test_structure_listing.cpp
// enumerate_structures lists each pipeline of device groups once: pipelines that differ only
// by a tp degree their groups cannot take (a group falls back to the largest degree that fits)
// are one pipeline, counted by hand on one node of four devices; and on the small search
// clusters no two listed pipelines hold the same groups.
#include <doctest/doctest.h>

#include <set>

#include "planner_fixtures.h"

using namespace whale;

namespace {

// One node of four A100s.
constexpr const char* kFourA100 = R"(name: four-a100
nodes:
  - name: a
    devices: [{model: a100-sxm4-80gb, count: 4}]
    intra_link: {kind: nvlink, bandwidth_gbps: 4800, latency_us: 3}
    network: {kind: infiniband, bandwidth_gbps: 200, latency_us: 5}
)";

// A pipeline as its groups' devices and degrees.
std::vector<std::pair<std::vector<int>, int>> groups_of(const plan::Structure& s) {
  std::vector<std::pair<std::vector<int>, int>> out;
  for (const plan::SharedGroup& g : s.groups) out.push_back({g->devices, g->tp});
  return out;
}

}  // namespace

TEST_CASE("a pipeline whose groups cannot take a degree is listed once, at the degree they take") {
  const plan::Cluster cluster = plan::load_cluster(test::temp_file("listing_four_a100.yaml", kFourA100));
  const plan::Model model = test::shipped_model("gpt3-1.3b");   // 32 heads: tp 1, 2 and 4
  const std::vector<plan::Structure> listed = plan::enumerate_structures(cluster, model, test::every_device(cluster));
  // Depth 1: the four devices at tp 1, 2, 4. Depth 2: two pairs at tp 1 or 2 (tp 4 falls back
  // to 2). Depth 3: slices of 2, 1, 1 at tp 1 or with the pair at 2 (tp 4 again falls back).
  // Depth 4: four single devices at tp 1 (every degree falls back). 3 + 2 + 2 + 1.
  std::vector<std::vector<std::pair<std::vector<int>, int>>> want = {
      {{{0, 1, 2, 3}, 1}}, {{{0, 1, 2, 3}, 2}}, {{{0, 1, 2, 3}, 4}},
      {{{0, 1}, 1}, {{2, 3}, 1}}, {{{0, 1}, 2}, {{2, 3}, 2}},
      {{{0, 1}, 1}, {{2}, 1}, {{3}, 1}}, {{{0, 1}, 2}, {{2}, 1}, {{3}, 1}},
      {{{0}, 1}, {{1}, 1}, {{2}, 1}, {{3}, 1}}};
  REQUIRE(listed.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    CAPTURE(i);
    CHECK(groups_of(listed[i]) == want[i]);
  }
}

TEST_CASE("no two listed pipelines hold the same groups") {
  for (const test::SearchCase& c : test::small_search_cases()) {
    CAPTURE(c.cluster.name);
    const std::vector<plan::Structure> listed =
        plan::enumerate_structures(c.cluster, c.model, test::every_device(c.cluster));
    std::set<std::vector<std::pair<std::vector<int>, int>>> distinct;
    for (const plan::Structure& s : listed) distinct.insert(groups_of(s));
    CHECK(distinct.size() == listed.size());
    CHECK(listed.size() > 10);
  }
}

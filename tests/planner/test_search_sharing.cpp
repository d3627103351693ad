// File: test_search_sharing.cpp
// The work whale-plan's searches share gives the results of searching alone: the precision
// advice's search runs beside the model's own (search_with_precision) and its plan is a full
// search's best in the substitute precision; a StructureCache shared by searches at other
// batches and precisions changes no result and holds one set per (precision, device set); a
// SubsetSearchCache gives the advice's search the model's searches on devices that price both
// precisions alike.
#include <doctest/doctest.h>

#include <atomic>
#include <future>
#include <thread>

#include "planner_fixtures.h"
#include "whale/plan/error.h"
#include "whale/plan/precision_advice.h"
#include "whale/plan/structure_cache.h"
#include "whale/plan/subset_search_cache.h"

using namespace whale;

namespace {

plan::PlannerOptions at_batch(int batch) {
  plan::PlannerOptions o;
  o.global_batch = batch;
  o.threads = 2;
  return o;
}

// Every plan of two results is the same plan with the same simulated figures, in the same order.
void check_same(const plan::PlanResult& a, const plan::PlanResult& b) {
  REQUIRE(a.ranked.size() == b.ranked.size());
  for (std::size_t i = 0; i < a.ranked.size(); ++i) {
    CHECK(a.ranked[i].label == b.ranked[i].label);
    CHECK(a.ranked[i].estimate.step_time_s == b.ranked[i].estimate.step_time_s);
    CHECK(a.ranked[i].plan.micro_batch_size == b.ranked[i].plan.micro_batch_size);
    CHECK(a.ranked[i].plan.stages.size() == b.ranked[i].plan.stages.size());
  }
  CHECK(a.baseline_found == b.baseline_found);
  CHECK(a.baseline.estimate.step_time_s == b.baseline.estimate.step_time_s);
  CHECK(a.upper_bound.samples_per_s == b.upper_bound.samples_per_s);
  CHECK(a.stats.candidates_evaluated == b.stats.candidates_evaluated);
  CHECK(a.stats.structures == b.stats.structures);
  CHECK(a.stats.structures_pruned == b.stats.structures_pruned);
}

struct Case {
  const char* name;
  plan::Cluster cluster;
  int batch;
};

std::vector<Case> small_clusters() {
  return {{"tiny-v100", plan::load_cluster(test::temp_file("sharing_tiny_v100.yaml", test::kTinyV100)), 16},
          {"a100-v100-small", plan::load_cluster(test::temp_file("sharing_two_node_mix.yaml", test::kTwoNodeMix)), 32},
          {"mixed-node (no advice: rtx3090 and a10 have bf16)", test::shipped_cluster("mixed-node"), 32}};
}

}  // namespace

TEST_CASE("the advice's search beside the model's: its plan is a full search's best in the substitute") {
  const sim::Simulator simulator;
  for (const Case& c : small_clusters()) {
    CAPTURE(c.name);
    const plan::Model bf16 = test::shipped_model("gpt2-124m");
    plan::Model fp16 = bf16;
    fp16.training.precision = plan::Precision::fp16;
    const plan::PlannerOptions options = at_batch(c.batch);
    const plan::PlanResult planned = plan::search_plans(c.cluster, bf16, simulator, options);
    const plan::PrecisionAdvice alone = plan::advise_precision(c.cluster, bf16, simulator, options, planned);

    plan::Model model = bf16;
    std::string note;
    const plan::PlanResult result =
        plan::search_with_precision(c.cluster, model, simulator, options, plan::PrecisionRequest{}, &note);
    check_same(result, planned);
    CHECK(note == plan::format_precision_warning(alone, planned));
    CHECK(model.training.precision == plan::Precision::bf16);

    plan::Model automatic_model = bf16;
    const plan::PlanResult automatic = plan::search_with_precision(
        c.cluster, automatic_model, simulator, options,
        plan::PrecisionRequest{plan::PrecisionRequest::Mode::automatic, plan::Precision::fp32}, &note);
    CHECK(note == plan::format_precision_choice(alone, planned));
    if (!alone.applies) {
      check_same(automatic, planned);
      continue;
    }
    REQUIRE(alone.substitute_found);
    const plan::PlanResult direct = plan::search_plans(c.cluster, fp16, simulator, options);
    check_same(alone.substitute_result, direct);
    check_same(automatic, alone.substitute_better ? direct : planned);
    CHECK(automatic_model.training.precision == (alone.substitute_better ? plan::Precision::fp16 : plan::Precision::bf16));
  }
}

TEST_CASE("a structure cache shared across batches and precisions changes no result") {
  const sim::Simulator simulator;
  const plan::Cluster cluster = plan::load_cluster(test::temp_file("sharing_two_node_mix.yaml", test::kTwoNodeMix));
  plan::Model model = test::shipped_model("gpt2-124m");
  auto cache = std::make_shared<plan::StructureCache>();
  for (plan::Precision precision : {plan::Precision::bf16, plan::Precision::fp16}) {
    model.training.precision = precision;
    for (int batch : {32, 64, 32}) {
      CAPTURE(batch);
      plan::PlannerOptions shared = at_batch(batch);
      shared.structure_cache = cache;
      check_same(plan::search_plans(cluster, model, simulator, shared), plan::search_plans(cluster, model, simulator, at_batch(batch)));
    }
    // The main search's structures and each device model's alone (the upper bound's), per
    // precision: the other batches found them there.
    CHECK(cache->size() == (precision == plan::Precision::bf16 ? 3u : 6u));
  }
}

TEST_CASE("search_with_precision hands the result it returns to `then` once, in every mode") {
  const sim::Simulator simulator;
  const plan::Cluster cluster = plan::load_cluster(test::temp_file("sharing_tiny_v100.yaml", test::kTinyV100));
  const plan::Model shipped = test::shipped_model("gpt2-124m");
  using Mode = plan::PrecisionRequest::Mode;
  for (const plan::PrecisionRequest request : {plan::PrecisionRequest{Mode::model, plan::Precision::fp32},
                                               plan::PrecisionRequest{Mode::automatic, plan::Precision::fp32},
                                               plan::PrecisionRequest{Mode::forced, plan::Precision::fp16}}) {
    CAPTURE(static_cast<int>(request.mode));
    plan::Model model = shipped;
    std::string note;
    int calls = 0;
    plan::PlanResult handed;
    plan::Precision precision_then = plan::Precision::fp32;
    const plan::PlanResult result = plan::search_with_precision(
        cluster, model, simulator, at_batch(16), request, &note, [&](const plan::PlanResult& r) {
          ++calls;
          handed = r;
          precision_then = model.training.precision;
        });
    CHECK(calls == 1);
    check_same(handed, result);
    // The model already has the returned plan's precision when `then` runs: bf16 as asked
    // (model), fp16 as chosen (auto: 4x as fast on V100s) or forced.
    CHECK(precision_then == result.best().plan.precision);
    CHECK(result.best().plan.precision == (request.mode == Mode::model ? plan::Precision::bf16 : plan::Precision::fp16));
  }
}

namespace {
// The structure cache tests' inputs: the two-node mix, GPT-2 124M and all the cluster's devices.
struct CacheInputs {
  plan::Cluster cluster = plan::load_cluster(test::temp_file("sharing_two_node_mix.yaml", test::kTwoNodeMix));
  plan::Model model = test::shipped_model("gpt2-124m");
  plan::SpaceLimits limits = all_devices(cluster);

  static plan::SpaceLimits all_devices(const plan::Cluster& c) {
    plan::SpaceLimits out;
    for (const plan::Device& d : c.devices) out.devices.push_back(d.id);
    return out;
  }
};
}  // namespace

TEST_CASE("a structure cache is keyed by values: copies share their structures, a changed field does not") {
  const CacheInputs inputs;
  const plan::Cluster& cluster = inputs.cluster;
  const plan::Model& model = inputs.model;
  const plan::SpaceLimits& limits = inputs.limits;
  plan::StructureCache cache;
  int made = 0;
  const auto ask = [&](const plan::Cluster& c, const plan::Model& m) {
    long left_out = -1;
    const plan::SharedStructures out = cache.get(c, m, limits, plan::SearchStrategies{}, &left_out, [&](long* left, bool*) {
      ++made;
      *left = 7;
      return std::vector<plan::Structure>(static_cast<size_t>(made));
    });
    CHECK(left_out == 7);
    return out->size();
  };
  CHECK(ask(cluster, model) == 1);
  {
    const plan::Cluster cluster_copy = cluster;   // another address, the same values
    const plan::Model model_copy = model;
    CHECK(ask(cluster_copy, model_copy) == 1);
  }
  CHECK(made == 1);
  plan::Model other_precision = model;
  other_precision.training.precision = plan::Precision::fp16;
  CHECK(ask(cluster, other_precision) == 2);
  plan::Cluster slower = cluster;
  slower.profiles.begin()->second.memory_bandwidth_bytes_per_s *= 0.5;   // a profile's figure
  CHECK(ask(slower, model) == 3);
  plan::Model wider = model;
  wider.layers[1].activation_bytes_split += 1;   // one layer's figure
  CHECK(ask(cluster, wider) == 4);
  CHECK(ask(cluster, model) == 1);   // the first entry stays
  CHECK(made == 4);
  CHECK(cache.size() == 4u);
}

TEST_CASE("a structure cache returns an incomplete (time-cut) set but does not keep it") {
  const CacheInputs in;
  plan::StructureCache cache;
  int made = 0;
  const auto ask = [&](bool complete) {
    long left_out = -1;
    const plan::SharedStructures out =
        cache.get(in.cluster, in.model, in.limits, plan::SearchStrategies{}, &left_out, [&](long* left, bool* done) {
          ++made;
          *left = 3;
          *done = complete;
          return std::vector<plan::Structure>(static_cast<size_t>(made));
        });
    CHECK(left_out == 3);
    return out->size();
  };
  CHECK(ask(false) == 1);
  CHECK(cache.size() == 0u);
  CHECK(ask(true) == 2);   // made again, and kept this time
  CHECK(ask(false) == 2);  // from the cache: make is not called
  CHECK(made == 2);
  CHECK(cache.size() == 1u);
}

TEST_CASE("a subset cache gives the precision advice the model's searches on devices that price both alike") {
  const sim::Simulator simulator;
  const plan::Cluster cluster = plan::load_cluster(test::temp_file("sharing_two_node_mix.yaml", test::kTwoNodeMix));
  const plan::Model bf16 = test::shipped_model("gpt2-124m");
  plan::Model fp16 = bf16;
  fp16.training.precision = plan::Precision::fp16;
  const plan::PlannerOptions alone = at_batch(32);
  plan::PlannerOptions shared = alone;
  auto cache = std::make_shared<plan::SubsetSearchCache>();
  shared.subset_cache = cache;

  const plan::PlanResult planned = plan::search_plans(cluster, bf16, simulator, shared);
  check_same(planned, plan::search_plans(cluster, bf16, simulator, alone));
  CHECK(cache->size() == 2u);   // the A100s alone and the V100s alone, in bf16
  CHECK(cache->shared_asks() == 0u);

  const plan::PrecisionAdvice advice = plan::advise_precision(cluster, bf16, simulator, shared, planned);
  REQUIRE(advice.substitute_found);
  check_same(advice.substitute_result, plan::search_plans(cluster, fp16, simulator, alone));
  // The A100s alone were taken from the bf16 search (they price both alike); the V100s alone
  // were searched again in fp16 (their bf16 runs at fp32's peak).
  CHECK(cache->size() == 3u);
  CHECK(cache->shared_asks() == 1u);
  for (const plan::RankedPlan& p : advice.substitute_result.ranked) {
    CHECK(p.plan.precision == plan::Precision::fp16);
    CHECK(p.plan.model.training.precision == plan::Precision::fp16);
  }
  // Asked again at the same batch, every search is found.
  plan::search_plans(cluster, bf16, simulator, shared);
  CHECK(cache->size() == 3u);
  CHECK(cache->shared_asks() == 3u);
}

TEST_CASE("a subset cache runs a search once per key, waits for one that runs and rethrows its error") {
  const CacheInputs in;
  const sim::Simulator simulator;
  plan::SubsetSearchCache cache;
  const auto key = [&](int batch) {
    return plan::SubsetSearchCache::key_of(in.cluster, in.model, in.limits.devices, simulator, at_batch(batch), batch);
  };
  std::atomic<int> runs{0};
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  const auto slow_search = [&](bool* found) {
    ++runs;
    released.wait();
    *found = true;
    plan::RankedPlan p;
    p.label = "slow";
    return p;
  };
  bool found_a = false, found_b = false;
  std::string label_a, label_b;
  std::thread a([&] { label_a = cache.get(key(32), &found_a, slow_search).label; });
  while (cache.size() == 0) std::this_thread::yield();   // a's search has started
  std::thread b([&] { label_b = cache.get(key(32), &found_b, slow_search).label; });
  while (cache.shared_asks() == 0) std::this_thread::yield();   // b is waiting for it
  release.set_value();
  a.join();
  b.join();
  CHECK(runs == 1);
  CHECK((found_a && found_b));
  CHECK(label_a == "slow");
  CHECK(label_b == "slow");

  int failing_runs = 0;
  const auto failing = [&](bool*) -> plan::RankedPlan {
    ++failing_runs;
    throw Error("", "", "no structure");
  };
  bool found = true;
  CHECK_THROWS_WITH_AS(cache.get(key(64), &found, failing), doctest::Contains("no structure"), const Error&);
  CHECK_THROWS_WITH_AS(cache.get(key(64), &found, failing), doctest::Contains("no structure"), const Error&);
  CHECK(failing_runs == 1);
  CHECK(cache.size() == 2u);
}

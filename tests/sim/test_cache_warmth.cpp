// File: test_cache_warmth.cpp
// Warm and cold pricing by the weights a device holds: a layer's weight bytes and a pass's
// activations, how warm a device's layers run against its cache, and the step times the simulator gives.
#include <doctest/doctest.h>

#include "sim_fixtures.h"
#include "whale/sim/cache_working_set.h"
#include "whale/plan/schedule_program.h"
#include "whale/sim/memory_model.h"
#include "whale/sim/simulator.h"

using namespace whale;
using namespace whale::sim;

namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kParameters = 65536;  // bf16 Adam: weights 2 + gradients 2 bytes: 0.25 MiB

/// A device whose GEMMs reach 0.5 of the peak cold and 1 warm, with `cache_mib` of cache (none
/// when 0).
plan::DeviceProfile cached_profile(double cache_mib) {
  plan::DeviceProfile p = test::flat_profile(1e12, 1e12);
  p.gemm_efficiency[plan::Precision::bf16] = plan::EfficiencyCurve({{1, 0.5}});
  if (cache_mib > 0) {
    p.cache.cache_bytes_per_device = cache_mib * kMiB;
    p.cache.warm_gemm_efficiency[plan::Precision::bf16] = plan::EfficiencyCurve({{1, 1.0}});
  }
  return p;
}

/// Two layers of kParameters parameters on one device, in one stage
/// (`chunks` 1) or in two pipeline chunks of the same device (`chunks` 2, interleaved).
plan::Plan two_layer_plan(const plan::DeviceProfile& profile, int chunks) {
  const plan::Layer layer = test::gemm_layer(64, 64, 64, 0, kParameters);
  plan::Plan p = test::pipeline_plan(test::make_cluster(1, 1, profile, test::link(1e12, 0), test::link(1e12, 0)),
                                     {layer, layer}, plan::ScheduleKind::gpipe, 1);
  if (chunks == 1) {
    p.stages.pop_back();
    p.stages.front().end_layer = 2;
  } else {
    p.stages.back().devices = {0};
  }
  return p;
}

}  // namespace

TEST_CASE("a layer's weight bytes are its parameters and gradients on one device") {
  const plan::Plan p = two_layer_plan(cached_profile(1), 1);
  CHECK(layer_weight_bytes(p, p.stages[0], 0, 0) == doctest::Approx(0.25 * kMiB));
  plan::Plan with_activations = p;
  with_activations.model.layers[1].activation_bytes_split = 1000;  // activations stay out
  with_activations.stages[0].shares = {3};
  CHECK(layer_weight_bytes(with_activations, with_activations.stages[0], 0, 1) == doctest::Approx(0.25 * kMiB));
  plan::Plan fp32 = p;
  fp32.precision = plan::Precision::fp32;  // 4 + 4 bytes
  CHECK(layer_weight_bytes(fp32, fp32.stages[0], 0, 0) == doctest::Approx(0.5 * kMiB));
  plan::Plan embedding = p;
  embedding.model.layers[0].kind = plan::LayerKind::embedding;  // gathers rows: its table stays out
  CHECK(layer_weight_bytes(embedding, embedding.stages[0], 0, 0) == 0);
}

TEST_CASE("ops run all warm up to a fifth of the cache, all cold from three fifths, linear between") {
  CHECK(warm_fraction(0, 10) == 1.0);
  CHECK(warm_fraction(2, 10) == doctest::Approx(1.0));
  CHECK(warm_fraction(3, 10) == doctest::Approx(0.75));
  CHECK(warm_fraction(4, 10) == doctest::Approx(0.5));
  CHECK(warm_fraction(6, 10) == doctest::Approx(0.0));
  CHECK(warm_fraction(10, 10) == 0.0);
  CHECK(warm_fraction(20, 10) == 0.0);
}

namespace {

/// layer_warm_fractions of the first replica of `p`'s stage `stage`, each checked equal to `expected`.
void check_warm_fractions(const plan::Plan& p, int stage, double passes, std::size_t layers, double expected) {
  const std::vector<double> fractions = layer_warm_fractions(p, p.stages.at(stage), 0, passes);
  REQUIRE(fractions.size() == layers);
  for (double f : fractions) CHECK(f == doctest::Approx(expected));
}

}  // namespace

TEST_CASE("a device's layers run warm by its working set against the cache") {
  // 0.5 MiB touched in all: a 2.5 MiB cache runs it all warm (a fifth of it), 1.25 MiB half
  // warm, 1 MiB a quarter, and a cache of 0.5 MiB, which it fills, all cold.
  check_warm_fractions(two_layer_plan(cached_profile(2.5), 1), 0, 1.0, 2, 1.0);
  check_warm_fractions(two_layer_plan(cached_profile(1.25), 1), 0, 1.0, 2, 0.5);
  check_warm_fractions(two_layer_plan(cached_profile(1), 1), 0, 1.0, 2, 0.25);
  check_warm_fractions(two_layer_plan(cached_profile(0.5), 1), 0, 1.0, 2, 0.0);
  // Two chunks of the same device share its cache: each chunk sees both layers.
  check_warm_fractions(two_layer_plan(cached_profile(2.5), 2), 1, 1.0, 1, 1.0);
  check_warm_fractions(two_layer_plan(cached_profile(1.25), 2), 1, 1.0, 1, 0.5);
  // A layer larger than the cache evicts the others too.
  plan::Plan streaming = two_layer_plan(cached_profile(2.5), 1);
  streaming.model.layers[1].parameters = 8 * kParameters;  // 2 MiB: W = 2.25 MiB
  check_warm_fractions(streaming, 0, 1.0, 2, 0.0);
  // A micro-batch's activations count too: 1/8 MiB a layer for its one sample, W = 0.5 + 0.25
  // MiB, a fifth of a 3.75 MiB cache; two micro-batches in flight (the first of two 1F1B
  // stages) make W = 0.5 + 2 x 0.25 = 1 MiB: (0.6 x 3.75 - 1) / (0.4 x 3.75) = 5/6 warm.
  plan::Plan with_activations = two_layer_plan(cached_profile(3.75), 1);
  for (plan::Layer& layer : with_activations.model.layers) layer.activation_bytes_split = kMiB / 8;
  CHECK(layer_pass_activation_bytes(with_activations, with_activations.stages[0], 0, 1) == kMiB / 8);
  check_warm_fractions(with_activations, 0, 1.0, 2, 1.0);
  check_warm_fractions(with_activations, 0, 2.0, 2, 5.0 / 6.0);
  // No cache block: every layer cold (an empty list).
  const plan::Plan uncached = two_layer_plan(cached_profile(0), 1);
  CHECK(layer_warm_fractions(uncached, uncached.stages[0], 0, 1.0).empty());
}

TEST_CASE("a measured warm fraction by working set stands in for the ramp") {
  // The same 0.5 MiB working set against a 2.5 MiB cache (all warm by the ramp) reads the
  // profile's walked curve instead: 0.8 at 0.25 MiB, 0.2 at 1 MiB, so 0.5 at 0.5 MiB (linear in
  // log W: halfway between in log2), flat beyond either end.
  plan::DeviceProfile walked = cached_profile(2.5);
  walked.cache.warm_fraction_by_working_set = plan::EfficiencyCurve({{0.25 * kMiB, 0.8}, {1 * kMiB, 0.2}});
  check_warm_fractions(two_layer_plan(walked, 1), 0, 1.0, 2, 0.5);
  walked.cache.warm_fraction_by_working_set = plan::EfficiencyCurve({{1 * kMiB, 0.6}, {4 * kMiB, 0.1}});
  check_warm_fractions(two_layer_plan(walked, 1), 0, 1.0, 2, 0.6);
  walked.cache.warm_fraction_by_working_set = plan::EfficiencyCurve({{0.1 * kMiB, 0.9}, {0.2 * kMiB, 0.0}});
  check_warm_fractions(two_layer_plan(walked, 1), 0, 1.0, 2, 0.0);
  // The curve lives in the cache block: without a cache size, every layer cold as before.
  plan::DeviceProfile no_cache = cached_profile(0);
  no_cache.cache.warm_fraction_by_working_set = plan::EfficiencyCurve({{1 * kMiB, 1.0}});
  const plan::Plan uncached = two_layer_plan(no_cache, 1);
  CHECK(layer_warm_fractions(uncached, uncached.stages[0], 0, 1.0).empty());
}

TEST_CASE("passes in flight are the group's in-flight pairs over its stages, at least one") {
  CHECK(passes_in_flight(1, 1) == 1.0);   // a single stage, or the last of a 1F1B pipeline
  CHECK(passes_in_flight(2, 1) == 2.0);   // the first of two 1F1B stages
  CHECK(passes_in_flight(8, 1) == 8.0);   // GPipe, 8 micro-batches
  CHECK(passes_in_flight(6, 2) == 3.0);   // two chunks of a device, 6 (chunk, micro-batch) pairs
  CHECK(passes_in_flight(1, 2) == 1.0);   // never below one pass
  CHECK(passes_in_flight(0, 0) == 1.0);
}

TEST_CASE("the first of two 1F1B stages holds two micro-batches of activations, the last one") {
  // Two stages on two devices, 1F1B, 4 micro-batches of one sample: stage 0 runs F0 F1 B0 ...
  // (two in flight), stage 1 F0 B0 F1 ... (one). Per layer 0.25 MiB of weights and 1/8 MiB of
  // activations; a 1.875 MiB cache: stage 1's W = 0.25 + 0.125 is a fifth of it (all warm),
  // stage 0's W = 0.25 + 2 x 0.125 = 0.5 MiB runs (0.6 x 1.875 - 0.5) / (0.4 x 1.875) = 5/6 warm.
  const plan::Layer layer = test::gemm_layer(64, 64, 64, 0, kParameters);
  plan::Plan p = test::pipeline_plan(test::make_cluster(1, 2, cached_profile(1.875), test::link(1e12, 0), test::link(1e12, 0)),
                                     {layer, layer}, plan::ScheduleKind::one_f_one_b, 4);
  for (plan::Layer& l : p.model.layers) l.activation_bytes_split = kMiB / 8;
  const plan::ScheduleProgram program = plan::generate_schedule(p);
  CHECK(peak_in_flight(program.groups.at(0), 0) == 2);
  CHECK(peak_in_flight(program.groups.at(1), 1) == 1);
  check_warm_fractions(p, 0, passes_in_flight(2, 1), 1, 5.0 / 6.0);
  check_warm_fractions(p, 1, passes_in_flight(1, 1), 1, 1.0);
}

TEST_CASE("the simulator prices a small working set by the warm curve, a large one by the cold, and blends between") {
  const Simulator sim;
  // Each layer's forward: 2 x 64^3 flops at 1e12 x efficiency; the step is three times the
  // forwards (a backward is two GEMMs) plus nothing else (no links used, no optimizer memory).
  const double flops = 2.0 * 64 * 64 * 64;
  const auto step = [&](const plan::Plan& p) { return sim.evaluate(p, {}).step_time_s; };
  plan::DeviceProfile warm_as_cold = cached_profile(0);
  warm_as_cold.gemm_efficiency[plan::Precision::bf16] = plan::EfficiencyCurve({{1, 1.0}});
  const double all_warm = step(two_layer_plan(warm_as_cold, 1));
  const double all_cold = step(two_layer_plan(cached_profile(0), 1));
  CHECK(all_cold - all_warm == doctest::Approx(2 * 3 * flops / 1e12 * (1 / 0.5 - 1)));
  // W = 0.5 MiB against caches of 10, 2.5, 1.25, 1, 0.5 and 0.125 MiB: time is warm x f + cold x (1 - f).
  CHECK(step(two_layer_plan(cached_profile(10), 1)) == doctest::Approx(all_warm));
  CHECK(step(two_layer_plan(cached_profile(2.5), 1)) == doctest::Approx(all_warm));
  CHECK(step(two_layer_plan(cached_profile(1.25), 1)) == doctest::Approx(0.5 * all_warm + 0.5 * all_cold));
  CHECK(step(two_layer_plan(cached_profile(1), 1)) == doctest::Approx(0.25 * all_warm + 0.75 * all_cold));
  CHECK(step(two_layer_plan(cached_profile(0.5), 1)) == doctest::Approx(all_cold));
  CHECK(step(two_layer_plan(cached_profile(0.125), 1)) == doctest::Approx(all_cold));
}

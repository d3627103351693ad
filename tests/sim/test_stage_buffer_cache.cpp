// File: test_stage_buffer_cache.cpp
// A framework that caches every stage's buffers (FrameworkMemory::stage_buffer_cache, whale-run):
// by hand, one block's backward buffers per stage on top of 1F1B's peak, a device holding two
// interleaved chunks at the sum of their own peaks, and full and selective recomputation's
// scratch held beside the head's transient, and a head's input gradient on a stage without
// block buffers; the GPT and Llama blocks' buffer sizes. (The YAML default by device kind and
// its round trip: tests/plan/test_specs_framework_memory.cpp.)
#include <doctest/doctest.h>

#include <string>

#include "sim_fixtures.h"
#include "whale/plan/device_profile.h"
#include "whale/plan/model.h"
#include "whale/plan/schedule_program.h"
#include "whale/sim/memory_model.h"
#include "whale/sim/simulator.h"

using namespace whale;
using namespace whale::sim;

namespace {

// One device per stage, 1F1B over 4 micro-batches of 1 sample. A layer: 1000 parameters (bf16
// Adam: 16 bytes each), 70 bytes kept per sample (10 replicated, 40 split, 20 attention) and
// backward buffers of 16 split + 6 replicated bytes per sample.
plan::Layer buffered_layer() {
  plan::Layer layer = test::gemm_layer(10, 10, 10, 0, 1000);
  layer.activation_bytes_replicated = 10;
  layer.activation_bytes_split = 40;
  layer.activation_bytes_attention = 20;
  layer.backward_buffer_bytes_split = 16;
  layer.backward_buffer_bytes_replicated = 6;
  return layer;
}

plan::Plan buffered_plan(int stages, int devices, bool cache) {
  const plan::Cluster c = test::make_cluster(1, devices, test::flat_profile(1e14, 1e12),
                                             test::link(1e11, 0), test::link(1e10, 0));
  plan::Plan p = test::pipeline_plan(c, std::vector<plan::Layer>(stages, buffered_layer()),
                                     plan::ScheduleKind::one_f_one_b, 4);
  for (auto& [name, profile] : p.cluster.profiles) profile.framework_memory.stage_buffer_cache = cache;
  return p;
}

double peak_of(const plan::Plan& p, int device) {
  return Simulator().evaluate(p, {}).devices.at(device).peak_memory_bytes;
}

// One stage on one device, 1F1B over 4 micro-batches of 1 sample (one in flight) under
// `recompute`: a block (kept 70, its input 4, buffers 22) and a head (its input 8, logits 20
// kept without recomputation, a fused loss: its backward holds the norm's output gradient, 8,
// beyond what it keeps).
plan::Plan block_and_head(plan::Recompute recompute) {
  plan::Layer block = buffered_layer();
  block.kind = plan::LayerKind::transformer;
  block.input_bytes = 4;
  plan::Layer head = test::gemm_layer(10, 10, 10, 0, 1000);
  head.kind = plan::LayerKind::head;
  head.activation_bytes_split = 20;
  head.logit_elements = 5;
  head.input_bytes = 8;
  const plan::Cluster c = test::make_cluster(1, 1, test::flat_profile(1e14, 1e12), test::link(1e11, 0),
                                             test::link(1e10, 0));
  plan::Plan p = test::pipeline_plan(c, {block}, plan::ScheduleKind::one_f_one_b, 4);
  p.model.layers.push_back(head);
  p.stages[0].end_layer = 2;
  p.stages[0].recompute = recompute;
  return p;
}

void cache_buffers(plan::Plan& p) {
  for (auto& [name, profile] : p.cluster.profiles) profile.framework_memory.stage_buffer_cache = true;
}

}  // namespace

TEST_CASE("stage_buffer_cache adds one block's backward buffers to each stage's peak") {
  // Two stages on two devices: device 0 keeps 2 micro-batches in flight (140 bytes), device 1
  // one (70); the buffers are 16 + 6 = 22 bytes a stage; the state 16 x 1000.
  const plan::Plan freed = buffered_plan(2, 2, false), cached = buffered_plan(2, 2, true);
  CHECK(peak_of(freed, 0) == doctest::Approx(16000 + 140));
  CHECK(peak_of(cached, 0) == doctest::Approx(16000 + 140 + 22));
  CHECK(peak_of(cached, 1) == doctest::Approx(16000 + 70 + 22));
  // At tp 2 the split part halves: 8 + 6; under sequence parallelism the replicated part too.
  CHECK(backward_buffer_bytes(buffered_layer(), 2, false) == 14);
  CHECK(backward_buffer_bytes(buffered_layer(), 2, true) == 11);
}

TEST_CASE("stage_buffer_cache: a device's interleaved chunks hold the sum of their own peaks") {
  // Four stages, two chunks on each of two devices (stage s on device s % 2), 4 micro-batches.
  plan::Plan p = buffered_plan(4, 2, true);
  p.schedule = {plan::ScheduleKind::interleaved_1f1b, 2};
  for (int s = 0; s < 4; ++s) p.stages[s].devices = {s % 2};
  const plan::ScheduleProgram program = plan::generate_schedule(p);
  // Megatron-LM's interleaved 1F1B on device 0 (stages 0 and 2): chunk 0 has all 4 micro-batches
  // in flight before its first backward (warm-up 2 x (2 - 0 - 1) + (2 - 1) x 2 = 4 forwards,
  // then one more with the first backward), chunk 2 at most 2.
  const int first = peak_in_flight(program.groups[0], 0), second = peak_in_flight(program.groups[0], 2);
  CHECK(first == 4);
  CHECK(second == 2);
  // Cached: (4 + 2) x 70 kept plus two stages' buffers, beside the two stages' state.
  CHECK(peak_of(p, 0) == doctest::Approx(2 * 16000 + 6 * 70 + 2 * 22));
  // Freed, the walk's simultaneous peak is lower.
  for (auto& [name, profile] : p.cluster.profiles) profile.framework_memory.stage_buffer_cache = false;
  CHECK(peak_of(p, 0) < 2 * 16000 + 6 * 70);
}

TEST_CASE("a GPT and a Llama block's backward buffers, per sample") {
  // bench-d256: s 128, h 256, ffn 1024, fp32: split s (2 ffn + 4 h) x 4 = 1,572,864 bytes
  // (GELU output and input, context, q, k, v), replicated 5 s h x 4 = 655,360.
  const plan::Model gpt = plan::load_model(std::string(WHALE_SOURCE_DIR) + "/configs/models/bench-d256.yaml");
  CHECK(gpt.layers.at(1).backward_buffer_bytes_split == 1572864);
  CHECK(gpt.layers.at(1).backward_buffer_bytes_replicated == 655360);
  CHECK(gpt.layers.at(0).backward_buffer_bytes_split == 0);  // the embedding has none
  // tiny-llama: the buffers are s (3 ffn + 2 q + 2 kv) x bytes split, 5 s h x bytes replicated.
  const plan::Model llama = plan::load_model(std::string(WHALE_SOURCE_DIR) + "/configs/models/tiny-llama.yaml");
  const plan::Layer& block = llama.layers.at(1);
  const double s = llama.sequence, h = llama.hidden, f = llama.ffn_hidden;
  const double kv = static_cast<double>(llama.kv_heads) * h / llama.heads;
  const double e = plan::bytes_per_element(llama.training.precision);
  CHECK(block.backward_buffer_bytes_split == doctest::Approx(s * (3 * f + 2 * h + 2 * kv) * e));
  CHECK(block.backward_buffer_bytes_replicated == doctest::Approx(5 * s * h * e));
}

TEST_CASE("stage_buffer_cache: full recomputation's scratch is held beside the head's transient") {
  plan::Plan p = block_and_head(plan::Recompute::full);
  // Kept: the two inputs, 12. Freed buffers: the larger rebuilt layer, the block's 70.
  CHECK(peak_of(p, 0) == doctest::Approx(2 * 16000 + 12 + 70));
  // Cached (whale-run): the block's buffers 22 and its scratch 70 held for the run, and beside
  // them the head rebuilt (20) with its backward's 8.
  cache_buffers(p);
  CHECK(peak_of(p, 0) == doctest::Approx(2 * 16000 + 12 + 22 + 70 + 20 + 8));
}

TEST_CASE("stage_buffer_cache: selective recomputation's scratch is held beside the head's transient") {
  plan::Plan p = block_and_head(plan::Recompute::selective);
  // Kept: the block's 10 + 40 (its attention part dropped) and the head's 20. Freed buffers:
  // the larger of the block's rebuilt attention, 20, and the head's backward, 8.
  CHECK(peak_of(p, 0) == doctest::Approx(2 * 16000 + 70 + 20));
  // Cached (whale-run): the block's buffers 22 and its attention scratch 20 held for the run,
  // and beside them the head's 8.
  cache_buffers(p);
  CHECK(peak_of(p, 0) == doctest::Approx(2 * 16000 + 70 + 22 + 20 + 8));
}

TEST_CASE("a stage of the head alone holds its input's gradient beside its norm's, cached or not") {
  // The block and the head of block_and_head on two devices, one stage each (1F1B, 4
  // micro-batches of 1 sample). The head's device: its state 16 x 1000, its logits 20 kept (one
  // micro-batch in flight), and in its backward the norm's output gradient 8 and its input's 8:
  // no block buffers on its stage hold the latter.
  plan::Plan p = block_and_head(plan::Recompute::none);
  const plan::Cluster c = test::make_cluster(1, 2, test::flat_profile(1e14, 1e12), test::link(1e11, 0),
                                             test::link(1e10, 0));
  plan::Plan two = test::pipeline_plan(c, {p.model.layers[0], p.model.layers[1]}, plan::ScheduleKind::one_f_one_b, 4);
  CHECK(peak_of(two, 1) == doctest::Approx(16000 + 20 + 8 + 8));
  cache_buffers(two);
  CHECK(peak_of(two, 1) == doctest::Approx(16000 + 20 + 8 + 8));
  // Beside a block on one stage, under the cache, the block's buffers (22) hold it.
  cache_buffers(p);
  CHECK(peak_of(p, 0) == doctest::Approx(2 * 16000 + 70 + 20 + 22 + 8));
}

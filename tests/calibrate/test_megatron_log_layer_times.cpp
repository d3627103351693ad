// File: test_megatron_log_layer_times.cpp
// Layer times from Megatron-LM logs written here in the formats Megatron prints
// (megatron/training/arguments.py's argument lines, megatron/core/timers.py's min/max and
// per-rank blocks): per-stage compute per micro-batch spread over the stage's layers by flops,
// hand-checked; the optimizer step per parameter; and the errors.
#include <doctest/doctest.h>


#include "calibrate_scratch.h"
#include "whale/plan/error.h"
#include "whale/plan/layer_times_import.h"
#include "whale/plan/model.h"
#include "whale/sim/layer_times_file.h"

using namespace whale;

namespace {

std::string scratch(const std::string& name, const std::string& text) {
  return test::calibrate_scratch("megatron-log", name, text);
}

// A 4-block gpt (h 64, 4 heads, ffn 256, s 32, vocabulary padded to 1024). Per sample forward
// flops (Megatron's formulas, as whale's gpt family counts them): a block 24 s h^2 + 4 s^2 h =
// 3407872 = 2^17 x 26, the head 2 s h V = 4194304 = 2^17 x 32, the embedding none. Parameters:
// embedding 67584 (1024 x 64 tokens + 32 x 64 positions), a block 49984, the head 128 (its final
// layernorm; the LM head is tied).
std::string arguments(int pp, int dp, int micro_batch, int global_batch, const std::string& option) {
  return std::string("------------------------ arguments ------------------------\n") +
         "  context_parallel_size ........................... 1\n"
         "  data_parallel_size .............................. " + std::to_string(dp) + "\n"
         "  ffn_hidden_size ................................. 256\n"
         "  global_batch_size ............................... " + std::to_string(global_batch) + "\n"
         "  hidden_size ..................................... 64\n"
         "  micro_batch_size ................................ " + std::to_string(micro_batch) + "\n"
         "  num_attention_heads ............................. 4\n"
         "  num_layers ...................................... 4\n"
         "  padded_vocab_size ............................... None\n"
         "  pipeline_model_parallel_size .................... " + std::to_string(pp) + "\n"
         "  rampup_batch_size ............................... None\n"
         "  seq_length ...................................... 32\n"
         "  swiglu .......................................... False\n"
         "  tensor_model_parallel_size ...................... 1\n"
         "  timing_log_level ................................ 2\n"
         "  timing_log_option ............................... " + option + "\n"
         "  untie_embeddings_and_output_weights ............. False\n"
         "  use_distributed_optimizer ....................... False\n"
         "  virtual_pipeline_model_parallel_size ............ None\n"
         "  world_size ...................................... " + std::to_string(pp * dp) + "\n"
         "-------------------- end of arguments ---------------------\n"
         " > padded vocab (size: 1000) with 24 dummy tokens (new size: 1024)\n";
}

// Three logging intervals of a pp 1 run (dp 2, micro-batch 2, global batch 16: 4 micro-batches
// per iteration); the first (warm-up) is left out, the max across ranks is kept.
const char* const kMinMaxBlocks = R"( [2026-11-27 02:00:01] iteration       10/     100 | consumed samples:          160 | elapsed time per iteration (ms): 1500.2 |
(min, max) time across ranks (ms):
    forward-compute ................................: (900.00, 999.00)
    backward-compute ...............................: (900.00, 999.00)
    optimizer ......................................: (90.00, 99.00)
 [2026-11-27 02:00:02] iteration       20/     100 | consumed samples:          320 | elapsed time per iteration (ms): 450.0 |
(min, max) time across ranks (ms):
    forward-compute ................................: (120.00, 130.00)
    backward-compute ...............................: (260.00, 272.00)
    batch-generator ................................: (0.50, 0.60)
    optimizer ......................................: (19.00, 20.00)
 [2026-11-27 02:00:03] iteration       30/     100 | consumed samples:          480 | elapsed time per iteration (ms): 452.0 |
(min, max) time across ranks (ms):
    forward-compute ................................: (121.00, 142.00)
    backward-compute ...............................: (250.00, 272.00)
    optimizer ......................................: (18.00, 20.00)
)";

// One interval of a pp 2 run (dp 1, micro-batch 1, global batch 4: 4 micro-batches) per rank.
const char* const kAllBlock = R"(times across ranks (ms):
  forward-compute:
     rank  0: 40.00
     rank  1: 84.00
  backward-compute:
     rank  0: 80.00
     rank  1: 168.00
  forward-send:
     rank  0: 3.00
  optimizer:
     rank  0: 10.00
     rank  1: 6.00
)";

void check(const plan::MeasuredLayerTime& m, plan::LayerKind kind, int micro_batch, double forward_s, double backward_s) {
  CHECK(m.kind == kind);
  CHECK(m.tp == 1);
  CHECK(m.micro_batch == micro_batch);
  CHECK(m.forward_s == doctest::Approx(forward_s).epsilon(1e-12));
  CHECK(m.backward_s == doctest::Approx(backward_s).epsilon(1e-12));
}

}  // namespace

TEST_CASE("a Megatron-LM log without pipelining: the max across ranks per micro-batch, spread by flops") {
  const std::string path = scratch("pp1.log", arguments(1, 2, 2, 16, "minmax") + kMinMaxBlocks);
  const plan::LayerTimes times = plan::load_megatron_log_layer_times(path);
  CHECK(times.source == path);
  // forward-compute: median of the maxima 130 and 142 = 136 ms per iteration, 34 ms per micro-batch
  // over 4 blocks and the head: a block 26/136 of it = 6.5 ms, the head 32/136 = 8 ms. Backward:
  // 272 ms, 68 ms per micro-batch: 13 and 16 ms. The embedding has no flops: left to the curves.
  REQUIRE(times.measurements.size() == 2);
  check(times.measurements[0], plan::LayerKind::transformer, 2, 0.0065, 0.013);
  check(times.measurements[1], plan::LayerKind::head, 2, 0.008, 0.016);
  // optimizer: 20 ms over the rank's 67584 + 4 x 49984 + 128 = 267648 parameters.
  CHECK(times.optimizer_s_per_parameter == doctest::Approx(0.020 / 267648).epsilon(1e-12));
  // whale-calibrate --layer-times reads it by content, for the device named.
  CHECK(sim::detect_layer_times_format(path) == sim::LayerTimesFormat::megatron_log);
  const std::string profiles = std::string(WHALE_SOURCE_DIR) + "/profiles";
  CHECK(sim::load_layer_times(path, {"a100-sxm4-80gb"}, profiles).at("a100-sxm4-80gb").measurements.size() == 2);
  CHECK_THROWS_WITH_AS(sim::load_layer_times(path, {"a100-sxm4-80gb", 2, 0}, profiles),
                       doctest::Contains("--layer-times-micro-batch"), Error);
}

TEST_CASE("a Megatron-LM log of a pipeline: each stage's ranks, its layers by flops") {
  const std::string path = scratch("pp2.log", arguments(2, 1, 1, 4, "all") + kAllBlock);
  const plan::LayerTimes times = plan::load_megatron_log_layer_times(path);
  // Stage 0 (rank 0): the embedding and blocks 0-1, 40/4 = 10 ms per micro-batch, 5 ms a block;
  // backward 80/4 = 20 ms, 10 ms a block. Stage 1 (rank 1): blocks 2-3 and the head,
  // 84/4 = 21 ms: a block 26/84 of it = 6.5 ms, the head 32/84 = 8 ms; backward 42 ms: 13 and
  // 16 ms. A block's time is the median over the four: (5 + 6.5) / 2 and (10 + 13) / 2.
  REQUIRE(times.measurements.size() == 2);
  check(times.measurements[0], plan::LayerKind::transformer, 1, 0.00575, 0.0115);
  check(times.measurements[1], plan::LayerKind::head, 1, 0.008, 0.016);
  // optimizer: 10 ms over stage 0's 167552 parameters, 6 ms over stage 1's 100096; the median.
  CHECK(times.optimizer_s_per_parameter == doctest::Approx(0.5 * (0.010 / 167552 + 0.006 / 100096)).epsilon(1e-12));
}

TEST_CASE("a Megatron-LM log that cannot be read fails naming what it lacks") {
  // min/max across ranks cannot tell a pipeline's stages apart.
  const std::string minmax = scratch("pp2-minmax.log", arguments(2, 1, 1, 4, "minmax") + kMinMaxBlocks);
  CHECK_THROWS_WITH_AS(plan::load_megatron_log_layer_times(minmax), doctest::Contains("--timing-log-option all"), Error);
  const std::string no_args = scratch("no-args.log", kMinMaxBlocks);
  CHECK_THROWS_WITH_AS(plan::load_megatron_log_layer_times(no_args), doctest::Contains("arguments block"), Error);
  const std::string no_timers = scratch("no-timers.log", arguments(1, 2, 2, 16, "minmax"));
  CHECK_THROWS_WITH_AS(plan::load_megatron_log_layer_times(no_timers), doctest::Contains("--timing-log-level"), Error);
  std::string level1 = arguments(1, 2, 2, 16, "minmax") +
                       "(min, max) time across ranks (ms):\n    forward-backward ...............................: (1.00, 2.00)\n";
  CHECK_THROWS_WITH_AS(plan::load_megatron_log_layer_times(scratch("level1.log", level1)),
                       doctest::Contains("forward-compute"), Error);
  std::string uneven = arguments(1, 3, 2, 16, "minmax") + kMinMaxBlocks;  // 16 samples over 3 x 2
  CHECK_THROWS_WITH_AS(plan::load_megatron_log_layer_times(scratch("uneven.log", uneven)),
                       doctest::Contains("global_batch_size"), Error);
}

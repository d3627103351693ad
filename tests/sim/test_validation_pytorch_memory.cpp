// File: test_validation_pytorch_memory.cpp
// The memory model against PyTorch's measured peak memory on one NVIDIA H200
// (configs/validation/h200-pytorch-memory: scripts/gpu_torch_bench.py's grid, 15 runs of GPT-2
// 124M and GPT-3 1.3B, eager and SDPA attention, fp32 and bf16 autocast), every row predicted
// uncalibrated from the shipped H200 profile with the framework declared as that script runs it.
//
// What the script's loop holds (scripts/gpu_torch_bench.py, train): fp32 parameters, fused
// AdamW, zero_grad(set_to_none=True) after each step, one micro-batch a step, the peak
// torch.cuda.max_memory_allocated() over a warm-up step and 2 timed steps: tensors only (no
// CUDA context, no allocator caching), so reserve_gib 0 and allocator_slack_fraction 0. Its
// peak is at the start of the second step's backward: Adam's m and v exist (from the first
// step), no gradient does yet (freed by the last zero_grad), every block's activations are
// kept, and cross_entropy's backward has allocated its buffers over the logits. The framework,
// as a profile's framework_memory block writes it:
//   {source: ..., reserve_gib: 0, allocator_slack_fraction: 0,
//    attention_implementation: eager | flash (the `sdpa` rows), cross_entropy_implementation:
//    pytorch, gradients_freed_after_step: true}
// and the precision: `fp32` rows train in fp32 (4 + 4 + 8 bytes per parameter); `bf16` rows
// run under torch.autocast(bfloat16), which keeps the fp32 parameters (the master weights),
// fp32 gradients (grad_reduce_precision: fp32) and Adam's fp32 m and v, and casts each GEMM
// weight to bf16 once per forward (autocast's weight cache; autograd keeps the copy until
// that GEMM's backward): 2 (the bf16 copies) + 4 + 12 (fp32 weights, m, v) bytes per parameter,
// whale's bf16 with master_weights fp32. Activations are bf16 there (GEMM outputs and the
// GEMMs' saved inputs), softmax and the loss fp32 (autocast's fp32 op list).
//
// Two rows by hand (P = 124,439,808 parameters: token table 50257 x 768, positions 1024 x 768,
// 12 blocks of 12h^2 + 13h = 7,087,872, final norm 2h; s = 1024, h = 768, a = 12, v = 50257,
// sh = 786,432, n = as^2 = 12,582,912, sv = 51,463,168):
//   gpt2-124m, micro-batch 1, eager, fp32: weights 4P 497,759,232 + Adam 8P 995,518,464 +
//     12 blocks x (16sh (two norm inputs, qkv and fc1 inputs) + 48sh (q, k, v, proj input,
//     GELU input and output) + 4n (the fp32 softmax)) = 12 x 100,663,296 + head (8sh (final
//     norm input and output) + 4sv (fp32 log-softmax)) 212,144,128 + the loss's backward 8sv
//     411,705,344 = 3,325,086,720 bytes = 3.097 GiB; measured 3.187 (-2.8%).
//   gpt2-124m, micro-batch 1, sdpa, bf16: weights 2P 248,879,616 + master, m, v 12P
//     1,493,277,696 + 12 x (8sh + 24sh + 4as (flash's log-sum-exp)) = 12 x 25,214,976 + head
//     (4sh + 4sv) 208,998,400 + 8sv 411,705,344 = 2,665,440,768 bytes = 2.482 GiB; measured
//     2.611 (-4.9%).
// What whale leaves out, each under 2% of a row: autocast keeps the residual stream and the
// norms' inputs in fp32 (4 bytes, not 2: 4sh more per block), the eager script's causal mask
// (s^2 bytes per block), the norms' fp32 mean and rstd, cuBLAS's workspace.
//
// One row ran a different step: gpt3-1.3b sdpa fp32 has no step time, the grid's deadline
// having stopped it after the warm-up step, whose peak is its optimizer step (Adam's m and v
// created beside the weights and gradients: 16P = 19.63 GiB) rather than a backward with
// Adam's state: whale's steady-state prediction is 11% above it.
//
// Tolerance 15%: the evaluation's bar for uncalibrated memory once the attention
// implementation is declared. Every row must also be predicted at or below the H200's memory
// (every run that ran fits).
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "whale/plan/device_profile.h"
#include "whale/plan/plan.h"
#include "whale/plan/schedule_program.h"
#include "whale/sim/memory_model.h"

using namespace whale;

namespace {

const std::string kGrid = std::string(WHALE_SOURCE_DIR) + "/configs/validation/h200-pytorch-memory/";

struct GridRow {
  std::string model, attention, precision;
  int micro_batch = 0;
  double peak_gib = 0;       // 0 when the run ran out of memory
  bool out_of_memory = false;
};

// grid.csv: model,sequence,micro_batch,attention,precision,peak_memory_gib,step_s,status.
std::vector<GridRow> read_grid() {
  std::ifstream in(kGrid + "grid.csv");
  std::string line;
  std::getline(in, line);
  std::vector<GridRow> rows;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream fields(line);
    for (std::string x; std::getline(fields, x, ',');) f.push_back(x);
    REQUIRE(f.size() >= 7);  // a row that ran out of memory has no peak and no step time
    const bool out_of_memory = f.back() == "out of memory";
    REQUIRE((out_of_memory || f.back() == "ok"));
    rows.push_back(GridRow{f[0], f[3], f[4], std::stoi(f[2]), out_of_memory ? 0.0 : std::stod(f[5]), out_of_memory});
  }
  return rows;
}

// The framework of scripts/gpu_torch_bench.py (the block in the banner).
plan::FrameworkMemory torch_bench_framework(const std::string& attention) {
  plan::FrameworkMemory f;
  f.source = "scripts/gpu_torch_bench.py: plain PyTorch, fused AdamW, zero_grad(set_to_none=True)";
  REQUIRE(plan::parse_attention_implementation(attention, &f.attention));  // sdpa reads as flash
  f.cross_entropy = plan::CrossEntropyImplementation::pytorch;
  f.gradients_freed_after_step = true;
  return f;
}

// One H200 (the shipped profile, uncalibrated) training `row`'s model on micro-batches of
// row.micro_batch samples, one a step.
plan::Plan row_plan(const GridRow& row, const plan::FrameworkMemory& framework) {
  plan::DeviceProfile profile = plan::load_device_profile(std::string(WHALE_SOURCE_DIR) + "/profiles/h200-sxm-141gb.yaml");
  profile.framework_memory = framework;
  profile.calibration = {};
  plan::Plan p;
  p.cluster.name = "one-h200";
  p.cluster.profiles[profile.name] = profile;
  p.cluster.devices.push_back(plan::Device{0, 0, 0, profile.name});
  plan::Node node;
  node.name = "node0";
  node.device_ids = {0};
  p.cluster.nodes.push_back(node);
  p.model = plan::load_model(kGrid + row.model + ".yaml");
  p.precision = row.precision == "bf16" ? plan::Precision::bf16 : plan::Precision::fp32;
  p.framework_precision.master_weights = plan::MasterWeights::fp32;
  p.framework_precision.grad_reduce = plan::GradReducePrecision::fp32;  // autocast's fp32 gradients
  p.model.training.precision = p.precision;
  p.model.training.framework_precision = p.framework_precision;
  plan::generate_layers(p.model, p.precision);
  p.schedule.kind = plan::ScheduleKind::one_f_one_b;
  p.micro_batches = 1;
  p.micro_batch_size = row.micro_batch;
  plan::Stage stage;
  stage.first_layer = 0;
  stage.end_layer = static_cast<int>(p.model.layers.size());
  stage.devices = {0};
  stage.shares = {row.micro_batch};
  p.stages.push_back(stage);
  plan::validate_plan(p);
  return p;
}

// The row of `model`, `micro_batch`, `attention` and `precision`.
GridRow row_of(const std::string& model, int micro_batch, const std::string& attention, const std::string& precision) {
  for (const GridRow& row : read_grid()) {
    if (row.model == model && row.micro_batch == micro_batch && row.attention == attention && row.precision == precision)
      return row;
  }
  FAIL("no row " << model << " " << micro_batch << " " << attention << " " << precision);
  return {};
}

sim::MemoryBreakdown predict(const plan::Plan& p) {
  return sim::replica_memory(p, plan::generate_schedule(p).groups.at(0), 0);
}

}  // namespace

TEST_CASE("the hand-worked rows: GPT-2 124M, micro-batch 1, eager fp32 and SDPA bf16") {
  const GridRow eager_fp32 = row_of("gpt2-124m", 1, "eager", "fp32");
  const plan::Plan p = row_plan(eager_fp32, torch_bench_framework("eager"));
  CHECK(p.model.parameter_count() == 124439808);
  const sim::MemoryBreakdown m = predict(p);
  CHECK(m.weights_bytes == 497759232);
  CHECK(m.gradients_bytes == 0);  // the peak precedes every gradient
  CHECK(m.optimizer_bytes == 995518464);
  CHECK(m.activations_bytes == 12 * 100663296.0 + 212144128 + 411705344);
  CHECK(m.total_bytes() == 3325086720.0);

  const GridRow sdpa_bf16 = row_of("gpt2-124m", 1, "sdpa", "bf16");
  const sim::MemoryBreakdown b = predict(row_plan(sdpa_bf16, torch_bench_framework("sdpa")));
  CHECK(b.weights_bytes == 248879616);
  CHECK(b.optimizer_bytes == 1493277696);
  CHECK(b.activations_bytes == 12 * 25214976.0 + 208998400 + 411705344);
  CHECK(b.total_bytes() == 2665440768.0);
}

TEST_CASE("every PyTorch run on the H200 predicted within 15% of its measured peak, and to fit") {
  int ran = 0;
  for (const GridRow& row : read_grid()) {
    const plan::Plan p = row_plan(row, torch_bench_framework(row.attention));
    const double predicted_gib = predict(p).total_bytes() / kBytesPerGiB;
    const double capacity_gib = p.cluster.profiles.begin()->second.memory_bytes / kBytesPerGiB;
    CAPTURE(row.model);
    CAPTURE(row.micro_batch);
    CAPTURE(row.attention);
    CAPTURE(row.precision);
    CAPTURE(row.peak_gib);
    CAPTURE(predicted_gib);
    if (row.out_of_memory) {
      CHECK(predicted_gib > capacity_gib);  // a run that ran out of memory: predicted not to fit
      continue;
    }
    ++ran;
    CHECK(std::abs(predicted_gib - row.peak_gib) / row.peak_gib < 0.15);
    CHECK(predicted_gib < capacity_gib);
  }
  CHECK(ran == 15);  // the shipped grid's runs (README.md there)
}

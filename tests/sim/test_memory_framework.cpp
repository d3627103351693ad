// File: test_memory_framework.cpp
// The framework's terms of the memory model by hand: what the attention core keeps under each
// implementation, precision and dropout, and what selective recomputation rebuilds; dropout
// masks in the family layers; DeepSpeed's fp32 gradient copy; the calibrated activation scale;
// PyTorch's cross-entropy buffers and gradients freed after each step.
#include <doctest/doctest.h>

#include "sim_fixtures.h"
#include "whale/plan/attention_memory.h"
#include "whale/plan/loss_memory.h"
#include "whale/plan/schedule_program.h"
#include "whale/sim/memory_model.h"

using namespace whale;
using namespace whale::sim;
using plan::AttentionImplementation;
using plan::Precision;

namespace {

// A layer whose attention core has 100 score elements in 10 rows per sample (a s² and a s),
// with attention dropout; 10 replicated and 40 split activation bytes; 1000 parameters.
plan::Layer attention_layer(bool dropout) {
  plan::Layer layer = test::gemm_layer(10, 10, 10, 0, 1000);
  layer.activation_bytes_replicated = 10;
  layer.activation_bytes_split = 40;
  layer.attention_score_elements = 100;
  layer.attention_rows = 10;
  layer.attention_dropout = dropout;
  layer.activation_bytes_attention = 500;  // what a listed copy would carry; not read here
  return layer;
}

// One device, one stage, one micro-batch of 2 samples (GPipe); `per_stage` devices of dp.
plan::Plan one_layer_plan(const plan::Layer& layer, Precision precision, int per_stage = 1) {
  const plan::Cluster c = test::make_cluster(1, per_stage, test::flat_profile(1e14, 1e12),
                                             test::link(1e11, 0), test::link(1e10, 0));
  plan::Plan p = test::pipeline_plan(c, {layer}, plan::ScheduleKind::gpipe, 1, per_stage, 1, 2);
  p.precision = precision;
  return p;
}

MemoryBreakdown memory_of(const plan::Plan& p) {
  return replica_memory(p, plan::generate_schedule(p).groups[0], 0);
}

plan::DeviceProfile& profile_of(plan::Plan& p) { return p.cluster.profiles.begin()->second; }

// A one-block gpt with s 32, h 64, a 4 and a vocabulary of 256 (layers not yet generated).
plan::Model tiny_gpt() {
  plan::Model m;
  m.family = "gpt";
  m.num_layers = 1;
  m.hidden = 64;
  m.heads = 4;
  m.sequence = 32;
  m.vocabulary = 256;
  return m;
}

}  // namespace

TEST_CASE("eager attention keeps an fp32 softmax, the dropout mask and the probabilities") {
  const plan::Layer on = attention_layer(true), off = attention_layer(false);
  // fp32: softmax 4 + mask 1 + dropped-out probabilities 4 = 9 bytes per score; without
  // dropout the context GEMM reads the softmax output itself: 4.
  CHECK(plan::attention_kept_bytes(on, AttentionImplementation::eager, Precision::fp32) == 900);
  CHECK(plan::attention_kept_bytes(off, AttentionImplementation::eager, Precision::fp32) == 400);
  // bf16: the fp32 softmax 4, the mask 1, the bf16 probabilities 2 = 7; without dropout the
  // bf16 cast of the probabilities is what the context GEMM keeps: 4 + 2 = 6.
  CHECK(plan::attention_kept_bytes(on, AttentionImplementation::eager, Precision::bf16) == 700);
  CHECK(plan::attention_kept_bytes(off, AttentionImplementation::eager, Precision::bf16) == 600);
}

TEST_CASE("a fused softmax keeps 2 + 1 + 2 bytes per score in half precision, eager's in fp32") {
  const plan::Layer on = attention_layer(true), off = attention_layer(false);
  // Korthikanti et al. 2022's 5as²: softmax output 2, mask 1, dropout output 2.
  CHECK(plan::attention_kept_bytes(on, AttentionImplementation::fused_softmax, Precision::bf16) == 500);
  CHECK(plan::attention_kept_bytes(on, AttentionImplementation::fused_softmax, Precision::fp16) == 500);
  CHECK(plan::attention_kept_bytes(off, AttentionImplementation::fused_softmax, Precision::bf16) == 200);
  // No fused kernel for fp32 inputs (Megatron-LM falls back to torch.softmax).
  CHECK(plan::attention_kept_bytes(on, AttentionImplementation::fused_softmax, Precision::fp32) == 900);
  CHECK(plan::attention_kept_bytes(off, AttentionImplementation::fused_softmax, Precision::fp32) == 400);
}

TEST_CASE("flash attention keeps one fp32 log-sum-exp per row and no s² term") {
  for (Precision precision : {Precision::fp32, Precision::bf16}) {
    CHECK(plan::attention_kept_bytes(attention_layer(true), AttentionImplementation::flash, precision) == 40);
  }
  // A listed layer (no attention shape) keeps its own figure, and nothing of it under flash.
  plan::Layer listed = test::gemm_layer(10, 10, 10, 0);
  listed.activation_bytes_attention = 77;
  CHECK(plan::attention_kept_bytes(listed, AttentionImplementation::eager, Precision::bf16) == 77);
  CHECK(plan::attention_kept_bytes(listed, AttentionImplementation::fused_softmax, Precision::fp32) == 77);
  CHECK(plan::attention_kept_bytes(listed, AttentionImplementation::flash, Precision::bf16) == 0);
}

TEST_CASE("selective recomputation rebuilds the core's kept bytes and its output, where it keeps any") {
  plan::Layer layer = attention_layer(true);
  layer.attention_output_bytes = 30;
  // Fused softmax in bf16: 500 kept, and the output 30; at tp 2 half of both.
  CHECK(plan::selective_rebuilt_bytes(layer, 500) == 530);
  const sim::FrameworkKept fused{10, 500};
  CHECK(recompute_transient_bytes(layer, 2, plan::Recompute::selective, false, fused) == 265);
  // Where the core keeps nothing (a listed layer under flash), nothing is re-run.
  CHECK(plan::selective_rebuilt_bytes(layer, 0) == 0);
  // A gpt block's output is its context, s q elements: 32 x 64 x 2 bytes in bf16.
  plan::Model m = tiny_gpt();
  plan::generate_layers(m, Precision::bf16);
  CHECK(m.layers.at(1).attention_output_bytes == 32 * 64 * 2);
}

TEST_CASE("the memory model keeps the profile's attention: 2 samples x (10 + 40 + attention)") {
  plan::Plan p = one_layer_plan(attention_layer(true), Precision::bf16);
  CHECK(memory_of(p).activations_bytes == 2 * (50 + 500));  // fused_softmax, the default
  profile_of(p).framework_memory.attention = AttentionImplementation::eager;
  CHECK(memory_of(p).activations_bytes == 2 * (50 + 700));
  profile_of(p).framework_memory.attention = AttentionImplementation::flash;
  CHECK(memory_of(p).activations_bytes == 2 * (50 + 40));
  // Selective recomputation keeps no attention part and rebuilds one layer's: 2 x 40.
  p.stages[0].recompute = plan::Recompute::selective;
  CHECK(memory_of(p).activations_bytes == 2 * 50 + 2 * 40);
  p.precision = Precision::fp32;
  profile_of(p).framework_memory.attention = AttentionImplementation::eager;
  p.stages[0].recompute = plan::Recompute::none;
  CHECK(memory_of(p).activations_bytes == 2 * (50 + 900));
}

TEST_CASE("the calibrated activation scale multiplies the activations only") {
  plan::Plan p = one_layer_plan(attention_layer(true), Precision::bf16);
  profile_of(p).calibration.activation_memory_scale = 0.5;
  const MemoryBreakdown m = memory_of(p);
  CHECK(m.activations_bytes == 550);
  // bf16 Adam: 2 + 2 + 12 bytes per parameter, unscaled.
  CHECK(m.weights_bytes + m.gradients_bytes + m.optimizer_bytes == 16000);
}

TEST_CASE("DeepSpeed's fp32 gradient copy: 4 bytes per parameter of the optimizer's shard") {
  // dp 2, optimizer sharded: each replica steps 500 of the 1000 parameters. bf16 Adam keeps 12
  // bytes per stepped parameter (fp32 master, m, v); the copy adds 4: 16 x 500 = 8000
  // (estimate_zero2_model_states_mem_needs' 16 * params / gpus).
  plan::Plan p = one_layer_plan(attention_layer(true), Precision::bf16, 2);
  p.stages[0].shard_optimizer = true;
  CHECK(memory_of(p).optimizer_bytes == 6000);
  profile_of(p).framework_memory.fp32_gradient_copy = true;
  CHECK(memory_of(p).optimizer_bytes == 8000);
  // Unsharded: all 1000 parameters.
  p.stages[0].shard_optimizer = false;
  CHECK(memory_of(p).optimizer_bytes == 16000);
  // Gradients accumulated in fp32 already (Megatron-LM): no copy.
  p.framework_precision.grad_reduce = plan::GradReducePrecision::fp32;
  CHECK(memory_of(p).optimizer_bytes == 12000);
  // fp32 training: the gradients are fp32, no copy and no master weights: m and v, 8 bytes.
  p.framework_precision.grad_reduce = plan::GradReducePrecision::training;
  p.precision = Precision::fp32;
  CHECK(memory_of(p).optimizer_bytes == 8000);
}

TEST_CASE("a gpt block's dropout masks are 1 byte at any precision, and absent without dropout") {
  // s 32, h 64, a 4. fp32: 16sh of tensors + 2sh of masks = 18sh = 36864; bf16: 10sh = 20480.
  plan::Model m = tiny_gpt();
  plan::generate_layers(m, Precision::fp32);
  CHECK(m.layers[0].activation_bytes_replicated == 32 * 64);  // the embedding's mask
  CHECK(m.layers[1].activation_bytes_replicated == 18 * 32 * 64);
  plan::generate_layers(m, Precision::bf16);
  CHECK(m.layers[1].activation_bytes_replicated == 10 * 32 * 64);
  CHECK(m.layers[1].activation_bytes_attention == 5 * 4 * 32 * 32);
  m.attention_dropout = 0.0;
  m.hidden_dropout = 0.0;
  plan::generate_layers(m, Precision::bf16);
  CHECK(m.layers[0].activation_bytes_replicated == 0);
  CHECK(m.layers[1].activation_bytes_replicated == 8 * 32 * 64);
  CHECK_FALSE(m.layers[1].attention_dropout);
  CHECK(m.layers[1].activation_bytes_attention == 2 * 4 * 32 * 32);  // the softmax output
  for (const plan::MemoryOp& op : m.layers[1].memory_ops) CHECK(op.name.find("dropout") == std::string::npos);
  // Korthikanti's per-layer total at 2 bytes, 34sh + 5as² with dropout, becomes 32sh + 2as².
  CHECK(kept_activation_bytes(m.layers[1], 1, plan::Recompute::none) == 32 * 32 * 64 + 2 * 4 * 32 * 32);
}

TEST_CASE("a framework that draws its dropout masks again keeps neither masks nor dropped probabilities") {
  plan::FrameworkMemory whale_run;
  whale_run.dropout_masks_kept = false;
  plan::FrameworkMemory megatron;  // keeps them, a gpu profile's default
  CHECK(megatron.dropout_masks_kept);
  CHECK_FALSE(plan::default_framework_memory("cpu").dropout_masks_kept);
  CHECK(plan::default_framework_memory("gpu").dropout_masks_kept);
  // The attention core keeps what it keeps without dropout: eager fp32 4 bytes per score instead
  // of 9, the fused softmax in bf16 2 instead of 5; flash 4 per row either way.
  const plan::Layer on = attention_layer(true);
  whale_run.attention = megatron.attention = AttentionImplementation::eager;
  CHECK(plan::attention_kept_bytes(on, megatron, Precision::fp32) == 900);
  CHECK(plan::attention_kept_bytes(on, whale_run, Precision::fp32) == 400);
  whale_run.attention = megatron.attention = AttentionImplementation::fused_softmax;
  CHECK(plan::attention_kept_bytes(on, megatron, Precision::bf16) == 500);
  CHECK(plan::attention_kept_bytes(on, whale_run, Precision::bf16) == 200);
  whale_run.attention = AttentionImplementation::flash;
  CHECK(plan::attention_kept_bytes(on, whale_run, Precision::bf16) == 40);
  // A gpt block at s 32, h 64 in fp32: 18sh replicated with its two 1-byte masks (2sh), 16sh
  // without; the embedding's s h mask is all it keeps.
  plan::Model m = tiny_gpt();
  plan::generate_layers(m, Precision::fp32);
  CHECK(m.layers[0].dropout_mask_bytes == 32 * 64);
  CHECK(m.layers[1].dropout_mask_bytes == 2 * 32 * 64);
  CHECK(plan::replicated_kept_bytes(m.layers[1], megatron) == 18 * 32 * 64);
  CHECK(plan::replicated_kept_bytes(m.layers[1], whale_run) == 16 * 32 * 64);
  CHECK(plan::replicated_kept_bytes(m.layers[0], whale_run) == 0);
  // The memory model: one block, 2 samples, fp32 eager: 2 x (18sh + split + 9as²) with the
  // masks kept, 2 x (16sh + split + 4as²) with them drawn again.
  plan::Plan p = one_layer_plan(m.layers[1], Precision::fp32);
  profile_of(p).framework_memory.attention = AttentionImplementation::eager;
  const double split = m.layers[1].activation_bytes_split;
  CHECK(memory_of(p).activations_bytes == 2 * (18 * 32 * 64 + split + 9 * 4 * 32 * 32));
  profile_of(p).framework_memory.dropout_masks_kept = false;
  CHECK(memory_of(p).activations_bytes == 2 * (16 * 32 * 64 + split + 4 * 4 * 32 * 32));
  // Under full recomputation the rebuilt layer holds the same, without masks, for its backward.
  p.stages[0].recompute = plan::Recompute::full;
  CHECK(recompute_transient_bytes(m.layers[1], 1, plan::Recompute::full, false,
                                  framework_kept(m.layers[1], profile_of(p).framework_memory, Precision::fp32)) ==
        16 * 32 * 64 + split + 4 * 4 * 32 * 32);
}

TEST_CASE("PyTorch's cross entropy holds 8 bytes per logit in its backward, a fused one none") {
  plan::Layer head = attention_layer(false);
  head.attention_score_elements = 0;
  head.logit_elements = 10;  // s v of one sample
  // nll_loss's fp32 gradient of the log-probabilities 4, log_softmax's of the logits 4.
  CHECK(plan::loss_backward_transient_bytes(head, plan::CrossEntropyImplementation::pytorch) == 80);
  CHECK(plan::loss_backward_transient_bytes(head, plan::CrossEntropyImplementation::fused) == 0);
  CHECK(plan::loss_backward_transient_bytes(attention_layer(false), plan::CrossEntropyImplementation::pytorch) == 0);
  // A gpt head: s v logits per sample (s 32, v 256).
  plan::Model m = tiny_gpt();
  plan::generate_layers(m, Precision::bf16);
  CHECK(m.layers.back().logit_elements == 32 * 256);
  CHECK(m.layers[1].logit_elements == 0);
  // In the memory model: 2 samples x (10 + 40 kept + 500 fused softmax + 80 of the loss).
  plan::Plan p = one_layer_plan(head, Precision::bf16);
  const Bytes attention_free = 2 * (50 + 500.0);  // a listed attention figure, 500
  CHECK(memory_of(p).activations_bytes == attention_free);
  profile_of(p).framework_memory.cross_entropy = plan::CrossEntropyImplementation::pytorch;
  CHECK(memory_of(p).activations_bytes == attention_free + 2 * 80);
  // Vocabulary-parallel over tp 2: each shard holds half the logits' buffers, and half the
  // split and attention bytes.
  plan::Plan tp2 = test::pipeline_plan(
      test::make_cluster(1, 2, test::flat_profile(1e14, 1e12), test::link(1e11, 0), test::link(1e10, 0)),
      {head}, plan::ScheduleKind::gpipe, 1, 2, 2, 2);
  profile_of(tp2).framework_memory.cross_entropy = plan::CrossEntropyImplementation::pytorch;
  CHECK(memory_of(tp2).activations_bytes == 2 * (10 + 540 / 2.0 + 80 / 2.0));
  // After the loss's buffers the head's backward holds the final norm's output gradient over
  // every row (its input bytes, 30) and beside it the input's gradient over the held rows (30,
  // 1/tp under sequence parallelism; none where a block's cached buffers hold it): the larger
  // of the loss's buffers and the two is what it holds beyond what it keeps.
  head.input_bytes = 30;
  CHECK(plan::head_norm_gradient_bytes(head) == 30);
  CHECK(plan::head_norm_gradient_bytes(attention_layer(false)) == 0);
  CHECK(plan::head_norm_backward_bytes(head, 1, false, false) == 60);
  CHECK(plan::head_norm_backward_bytes(head, 4, true, false) == 30 + 7.5);
  CHECK(plan::head_norm_backward_bytes(head, 4, false, true) == 30);
  CHECK(plan::head_norm_backward_bytes(attention_layer(false), 1, false, false) == 0);
  using plan::CrossEntropyImplementation;
  CHECK(plan::head_backward_transient_bytes(head, CrossEntropyImplementation::pytorch, 1, false, false) == 80);
  CHECK(plan::head_backward_transient_bytes(head, CrossEntropyImplementation::pytorch, 4, false, false) == 60);
  CHECK(plan::head_backward_transient_bytes(head, CrossEntropyImplementation::fused, 2, false, true) == 30);
  CHECK(plan::head_backward_transient_bytes(attention_layer(false), CrossEntropyImplementation::pytorch, 1, false,
                                            false) == 0);
  // A stage of the head alone has no block buffers to hold the input's gradient.
  plan::Plan fused = one_layer_plan(head, Precision::bf16);
  CHECK(memory_of(fused).activations_bytes == attention_free + 2 * 60);
}

TEST_CASE("gradients freed after each step: held from a stage's first backward, not before") {
  // bf16, 1000 parameters: 2000 bytes of gradients; 2 samples keep 2 x (10 + 40 + 200) = 500
  // (eager off, the default fused softmax without dropout: 2 bytes per score).
  plan::Layer layer = attention_layer(false);
  plan::Plan p = one_layer_plan(layer, Precision::bf16);
  profile_of(p).framework_memory.gradients_freed_after_step = true;
  // One micro-batch: before the backward 500 of activations and no gradients; after it the
  // 2000 of gradients and no activations, the higher: the peak is the optimizer step's.
  MemoryBreakdown m = memory_of(p);
  CHECK(m.gradients_bytes == 2000);
  CHECK(m.activations_bytes == 0);
  CHECK(m.peak_in_flight == 0);
  // With 100 parameters (200 bytes of gradients) the peak is the activations', before any
  // gradient exists.
  layer.parameters = 100;
  p = one_layer_plan(layer, Precision::bf16);
  profile_of(p).framework_memory.gradients_freed_after_step = true;
  m = memory_of(p);
  CHECK(m.gradients_bytes == 0);
  CHECK(m.activations_bytes == 500);
  CHECK(m.peak_in_flight == 1);
  // Persistent gradients (the default) are there throughout.
  profile_of(p).framework_memory.gradients_freed_after_step = false;
  CHECK(memory_of(p).gradients_bytes == 200);
  CHECK(memory_of(p).activations_bytes == 500);
  // Two micro-batches under 1F1B on one stage (forward, backward, forward, backward): the
  // second forward's activations sit beside the gradients of the first backward.
  p.micro_batches = 2;
  p.schedule.kind = plan::ScheduleKind::one_f_one_b;
  profile_of(p).framework_memory.gradients_freed_after_step = true;
  m = memory_of(p);
  CHECK(m.gradients_bytes == 200);
  CHECK(m.activations_bytes == 500);
  // The loss's buffers count at the peak of the activations, before the gradients.
  p.micro_batches = 1;
  p.model.layers[0].logit_elements = 10;
  profile_of(p).framework_memory.cross_entropy = plan::CrossEntropyImplementation::pytorch;
  m = memory_of(p);
  CHECK(m.gradients_bytes == 0);
  CHECK(m.activations_bytes == 500 + 2 * 80);
}

// File: op_cost.cpp
// Forward, backward and recomputation time of a layer from a device profile's peaks and
// achieved-efficiency curves (a roofline when the profile has no curve); memory ops of a class
// the profile measured as compute-bound (op_bandwidth) take the measured time instead; a layer
// shape the profile measured whole (layer_times) takes its measured time (measured_layer_time.h);
// the attention core of a framework with measured flash-attention rates takes those rates.
#include "whale/sim/op_cost.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "whale/sim/calibration.h"
#include "whale/sim/measured_layer_time.h"

namespace whale::sim {

Flops gemm_flops(const plan::GemmOp& gemm, int tp, double samples) {
  const Flops flops = 2.0 * gemm.m * gemm.n * gemm.k * gemm.count * samples;
  return gemm.tp_split ? flops / tp : flops;
}

Seconds gemm_kernel_s(const plan::GemmOp& gemm, const plan::DeviceProfile& profile,
                      plan::Precision precision, int tp, double samples) {
  const Flops flops = gemm_flops(gemm, tp, samples);
  if (flops <= 0) return 0;
  // A grouped GEMM of experts runs `count` small products: each at its own shape's efficiency.
  const double efficiency = profile.gemm_curve(precision).at(gemm.expert ? flops / gemm.count : flops);
  return calibrated_gemm_s(flops / (profile.peak(precision) * efficiency), flops, profile);
}

Seconds memory_kernel_s(const plan::MemoryOp& op, const plan::DeviceProfile& profile, int tp,
                        double samples, bool sequence_parallel, Pass pass) {
  const bool split = op.tp_split || sequence_parallel;
  const Bytes bytes = split ? op.bytes * samples / tp : op.bytes * samples;
  if (bytes <= 0) return 0;
  // Ops the profile measured as compute-bound (a CPU core's tanh, exp, sqrt) take their time.
  const BytesPerSecond measured =
      pass == Pass::forward ? profile.op_bandwidth(op.name) : profile.op_backward_bandwidth(op.name);
  if (measured > 0) return calibrated_memory_op_s(bytes / measured, profile);
  const double efficiency = profile.memory_efficiency.at(bytes);
  return calibrated_memory_op_s(bytes / (profile.memory_bandwidth_bytes_per_s * efficiency), profile);
}

double gemm_kernels(const plan::GemmOp& gemm) {
  return gemm.expert ? std::max(1.0, std::round(gemm.count)) : 1.0;
}

bool recomputed_in_full(plan::LayerKind kind) {
  return kind != plan::LayerKind::embedding && kind != plan::LayerKind::head;
}

namespace {

/// A layer's ops summed: LayerCost without layer overhead and recomputation, and the part of
/// the forward that is the attention core (what selective recomputation re-runs).
struct OpSums {
  LayerCost cost;
  Seconds attention_core_s = 0;
};

/// Whether the profile's framework runs the attention core as one flash kernel whose rates it
/// measured: its GEMMs and memory ops are then priced by those rates together.
bool flash_priced(const plan::DeviceProfile& profile) {
  return !profile.flash_attention.empty() &&
         profile.framework_memory.attention == plan::AttentionImplementation::flash;
}

/// The attention core of a flash-priced layer: its GEMMs' FLOPs at the measured rate of the
/// nearest head size (the scores GEMM's k), forward one kernel, backward three (whale-run's
/// row statistics, dq, and dk with dv); the softmax and dropout are inside the kernels.
void add_flash_attention(const plan::Layer& layer, const plan::DeviceProfile& profile, int tp,
                         double samples, Seconds launch_s, OpSums* out) {
  Flops flops = 0;
  int head_size = 0;
  for (const plan::GemmOp& gemm : layer.gemms) {
    if (!is_attention_core(gemm.name)) continue;
    flops += gemm_flops(gemm, tp, samples);
    if (gemm.name.find("score") != std::string::npos) head_size = static_cast<int>(gemm.k);
  }
  if (flops <= 0) return;
  const plan::FlashAttentionRate& rate = profile.flash_attention.nearest(head_size);
  const Seconds forward_s = flops / rate.forward_flops_per_s + launch_s;
  out->cost.forward_s += forward_s;
  out->cost.backward_s += 2.0 * flops / rate.backward_flops_per_s + 3.0 * launch_s;
  out->cost.forward_flops += flops;
  out->attention_core_s += forward_s;
}

OpSums op_sums(const plan::Layer& layer, const plan::DeviceProfile& profile,
               plan::Precision precision, int tp, double samples, bool sequence_parallel) {
  const Seconds launch_s = op_launch_s(profile);
  const bool flash = flash_priced(profile);
  OpSums out;
  LayerCost& cost = out.cost;
  if (flash) add_flash_attention(layer, profile, tp, samples, launch_s, &out);
  for (const plan::GemmOp& gemm : layer.gemms) {
    if (flash && is_attention_core(gemm.name)) continue;
    const Seconds op_s = gemm_kernel_s(gemm, profile, precision, tp, samples) + gemm_kernels(gemm) * launch_s;
    cost.forward_s += op_s;
    cost.backward_s += 2.0 * op_s;  // input gradient and weight gradient
    cost.forward_flops += gemm_flops(gemm, tp, samples);
    if (is_attention_core(gemm.name)) {
      out.attention_core_s += op_s;  // both operands are activations: no weights
    } else {
      cost.backward_weight_s += op_s;
    }
  }
  for (const plan::MemoryOp& op : layer.memory_ops) {
    if (flash && is_attention_core(op.name)) continue;
    const Seconds forward_s = memory_kernel_s(op, profile, tp, samples, sequence_parallel);
    cost.forward_s += forward_s + launch_s;
    // Without backward figures of its own the profile prices both passes alike.
    const Seconds backward_s = profile.op_backward_bandwidth_bytes_per_s.empty()
                                   ? forward_s
                                   : memory_kernel_s(op, profile, tp, samples, sequence_parallel, Pass::backward);
    cost.backward_s += backward_s + launch_s;
    if (is_attention_core(op.name)) out.attention_core_s += forward_s + launch_s;
  }
  return out;
}

/// `part` x `target` / `whole`; 0 when nothing was modelled.
Seconds scaled(Seconds part, Seconds target, Seconds whole) { return whole > 0 ? part * target / whole : 0; }

/// The op sums of a layer whose shape the profile measured (measured_layer_time.h): the
/// uncalibrated ops scaled so that their forward and backward sums equal the measured times.
/// The fitted kernel-level figures (GEMM efficiency, memory-op scale, kernel overhead) are
/// already in a measured time, so they are not applied again.
std::optional<OpSums> measured_op_sums(const plan::Layer& layer, const plan::DeviceProfile& profile,
                                       plan::Precision precision, int tp, double samples,
                                       bool sequence_parallel) {
  // A measured dense block says nothing of an MoE block's experts and all-to-alls.
  if (layer.experts > 0 || profile.layer_times.of_shape(layer.kind, tp).empty()) return std::nullopt;
  plan::DeviceProfile uncalibrated = profile;
  uncalibrated.calibration = plan::ProfileCalibration{};
  const auto modelled = [&](int degree, double micro_batch) {
    const LayerCost c = op_sums(layer, uncalibrated, precision, degree, micro_batch, sequence_parallel).cost;
    return LayerTimePair{c.forward_s, c.backward_s};
  };
  const LayerTimePair measured = *measured_layer_time(profile.layer_times, layer.kind, tp, samples, modelled);
  const OpSums ops = op_sums(layer, uncalibrated, precision, tp, samples, sequence_parallel);
  OpSums out = ops;
  out.cost.forward_s = measured.forward_s;
  out.cost.backward_s = measured.backward_s;
  out.cost.backward_weight_s = scaled(ops.cost.backward_weight_s, measured.backward_s, ops.cost.backward_s);
  out.attention_core_s = scaled(ops.attention_core_s, measured.forward_s, ops.cost.forward_s);
  out.cost.measured = true;
  return out;
}

}  // namespace

LayerCost layer_cost(const plan::Layer& layer, const plan::DeviceProfile& profile,
                     plan::Precision precision, int tp, double samples,
                     plan::Recompute recompute, bool sequence_parallel) {
  const std::optional<OpSums> measured =
      measured_op_sums(layer, profile, precision, tp, samples, sequence_parallel);
  const OpSums ops = measured ? *measured : op_sums(layer, profile, precision, tp, samples, sequence_parallel);
  LayerCost cost = ops.cost;
  add_layer_overhead(profile, &cost);
  switch (recompute) {
    case plan::Recompute::none: cost.recompute_s = 0; break;
    case plan::Recompute::full:
      cost.recompute_s = recomputed_in_full(layer.kind) ? cost.forward_s : 0;
      break;
    case plan::Recompute::selective: cost.recompute_s = ops.attention_core_s; break;
  }
  return cost;
}

}  // namespace whale::sim

// File: op_cost.cpp
// Forward, backward and recomputation time of a layer from a device profile's peaks and
// achieved-efficiency curves (a roofline when the profile has no curve); memory ops of a class
// the profile measured as compute-bound (op_bandwidth) take the measured time instead.
#include "whale/sim/op_cost.h"

#include "whale/sim/calibration.h"

namespace whale::sim {

Flops gemm_flops(const plan::GemmOp& gemm, int tp, double samples) {
  const Flops flops = 2.0 * gemm.m * gemm.n * gemm.k * gemm.count * samples;
  return gemm.tp_split ? flops / tp : flops;
}

Seconds gemm_kernel_s(const plan::GemmOp& gemm, const plan::DeviceProfile& profile,
                      plan::Precision precision, int tp, double samples) {
  const Flops flops = gemm_flops(gemm, tp, samples);
  if (flops <= 0) return 0;
  const double efficiency = profile.gemm_curve(precision).at(flops);
  return calibrated_gemm_s(flops / (profile.peak(precision) * efficiency), profile);
}

Seconds memory_kernel_s(const plan::MemoryOp& op, const plan::DeviceProfile& profile, int tp,
                        double samples, bool sequence_parallel) {
  const bool split = op.tp_split || sequence_parallel;
  const Bytes bytes = split ? op.bytes * samples / tp : op.bytes * samples;
  if (bytes <= 0) return 0;
  // Ops the profile measured as compute-bound (a CPU core's tanh, exp, sqrt) take their time.
  const BytesPerSecond measured = profile.op_bandwidth(op.name);
  if (measured > 0) return calibrated_memory_op_s(bytes / measured, profile);
  const double efficiency = profile.memory_efficiency.at(bytes);
  return calibrated_memory_op_s(bytes / (profile.memory_bandwidth_bytes_per_s * efficiency), profile);
}

bool is_attention_core(const std::string& op_name) {
  static const char* const kCoreParts[] = {"score", "softmax", "attention_dropout",
                                           "attn_dropout", "context"};
  for (const char* part : kCoreParts) {
    if (op_name.find(part) != std::string::npos) return true;
  }
  return false;
}

bool recomputed_in_full(plan::LayerKind kind) {
  return kind != plan::LayerKind::embedding && kind != plan::LayerKind::head;
}

LayerCost layer_cost(const plan::Layer& layer, const plan::DeviceProfile& profile,
                     plan::Precision precision, int tp, double samples,
                     plan::Recompute recompute, bool sequence_parallel) {
  const Seconds launch_s = op_launch_s(profile);
  LayerCost cost;
  Seconds attention_core_s = 0;
  for (const plan::GemmOp& gemm : layer.gemms) {
    const Seconds kernel_s = gemm_kernel_s(gemm, profile, precision, tp, samples);
    cost.forward_s += kernel_s + launch_s;
    cost.backward_s += 2.0 * (kernel_s + launch_s);  // input gradient and weight gradient
    cost.forward_flops += gemm_flops(gemm, tp, samples);
    if (is_attention_core(gemm.name)) {
      attention_core_s += kernel_s + launch_s;  // both operands are activations: no weights
    } else {
      cost.backward_weight_s += kernel_s + launch_s;
    }
  }
  for (const plan::MemoryOp& op : layer.memory_ops) {
    const Seconds kernel_s = memory_kernel_s(op, profile, tp, samples, sequence_parallel);
    cost.forward_s += kernel_s + launch_s;
    cost.backward_s += kernel_s + launch_s;
    if (is_attention_core(op.name)) attention_core_s += kernel_s + launch_s;
  }
  add_layer_overhead(profile, &cost);
  switch (recompute) {
    case plan::Recompute::none: cost.recompute_s = 0; break;
    case plan::Recompute::full:
      cost.recompute_s = recomputed_in_full(layer.kind) ? cost.forward_s : 0;
      break;
    case plan::Recompute::selective: cost.recompute_s = attention_core_s; break;
  }
  return cost;
}

}  // namespace whale::sim

// File: op_cost.h
// Op costs: the time of one layer's forward, backward and recomputation on one device model,
// at a tensor-parallel degree and a number of samples, from the profile's efficiency curves.
#pragma once

#include <string>

#include "whale/plan/device_profile.h"
#include "whale/plan/model.h"
#include "whale/plan/plan.h"
#include "whale/plan/units.h"

namespace whale::sim {

/// Flops one device executes for `gemm` over `samples` samples at tp degree `tp`:
/// 2*m*n*k*count*samples, divided by tp when the GEMM is tp_split.
Flops gemm_flops(const plan::GemmOp& gemm, int tp, double samples);

/// Kernel time of one forward GEMM (no launch): flops / (peak(precision) * curve.at(flops)).
/// The op runs as one batched kernel over its count x samples products, so the efficiency
/// curve is read at the flops of that kernel. 0 for a GEMM of no flops.
Seconds gemm_kernel_s(const plan::GemmOp& gemm, const plan::DeviceProfile& profile,
                      plan::Precision precision, int tp, double samples);

/// The kernels a GEMM op launches, each paying op_launch_s: one, or one per expert for a routed
/// expert's grouped GEMM (its count, the experts the device holds, rounded; at least one).
/// Megatron-Core's --moe-grouped-gemm runs Transformer Engine's GroupedLinear, which in bf16 and
/// fp16 loops over the experts launching one cuBLAS GEMM each on its compute streams
/// (multi_stream_cublas_gemm, transformer_engine/common/gemm/cublaslt_gemm.cu), and whale-run's
/// CUDA backend loops over the experts as well (docs/moe.md).
double gemm_kernels(const plan::GemmOp& gemm);

/// Which pass of a layer an op's time is asked for.
enum class Pass { forward, backward };

/// Kernel time of one memory op (no launch) in `pass`, bytes counted as the model counts the
/// op's forward, divided by tp if tp_split or under sequence parallelism (which shards
/// layernorm, dropout and residual along the sequence: every memory op of the layer then runs
/// on 1/tp of the tokens). An op of a class the profile measured (op_bandwidth: compute-bound
/// on the device) takes bytes / that pass's measured figure; any other is memory-bound, the
/// same both ways: bytes / (memory bandwidth * memory_efficiency.at(bytes)).
Seconds memory_kernel_s(const plan::MemoryOp& op, const plan::DeviceProfile& profile, int tp,
                        double samples, bool sequence_parallel = false, Pass pass = Pass::forward);

/// Whether a named op belongs to the attention core: plan::is_attention_core (model.h).
using plan::is_attention_core;

/// Whether full recomputation recomputes a layer of this kind: the blocks only. Megatron-LM
/// checkpoints the transformer layers and keeps the embedding's and the head's (logits, loss)
/// activations, and whale-run's block stage recomputes only its blocks the same way.
bool recomputed_in_full(plan::LayerKind kind);

/// Compute time of one layer on one device (tp communication excluded).
struct LayerCost {
  Seconds forward_s = 0;    // every GEMM and memory op once, plus one launch each
  Seconds backward_s = 0;   // GEMMs twice (input and weight gradients, two launches) plus
                            // memory ops once; recomputation excluded
  Seconds backward_weight_s = 0;  // the part of backward_s that a split backward (zb-h1)
                                  // runs in its weight pass: the weight-gradient GEMMs (every
                                  // GEMM but the attention core's, which has no weights)
  Seconds recompute_s = 0;  // full: forward_s again (blocks only, recomputed_in_full); selective: the attention core's forward;
                            // none: 0
  Flops forward_flops = 0;  // GEMM flops this device executes in one forward
  bool measured = false;    // forward_s and backward_s come from the profile's layer_times
};

/// The cost of `layer`. Where the profile measured the layer's shape (layer_times), the rule of
/// measured_layer_time.h gives forward_s and backward_s and the ops' shares scale to them
/// (backward_weight_s, the attention core); layer overhead and recomputation apply as to any
/// layer (full recomputation re-runs the measured forward).
LayerCost layer_cost(const plan::Layer& layer, const plan::DeviceProfile& profile,
                     plan::Precision precision, int tp, double samples,
                     plan::Recompute recompute, bool sequence_parallel = false);

}  // namespace whale::sim

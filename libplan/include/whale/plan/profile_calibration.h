// File: profile_calibration.h
// ProfileCalibration: the figures whale-calibrate fits from measured runs, carried by a device
// profile (YAML: the optional `calibration` block; docs/calibrate.md). The defaults leave every
// prediction as the uncalibrated profile makes it.
#pragma once

#include <map>
#include <string>

#include "whale/plan/units.h"

namespace whale::plan {

/// Fitted figures of one link kind ("nvlink", "shm", "ethernet", ...; the cluster's link `kind`),
/// applied by the simulator's collective and point-to-point costs to links of that kind only
/// (YAML: calibration.links.<kind>).
struct LinkCalibration {
  /// Achieved / datasheet bandwidth: the link moves bytes at bandwidth x scale.
  double bandwidth_scale = 1.0;   // YAML: bandwidth_scale
  Seconds latency_s = 0;          // added to the link's latency per message (YAML: latency_us)
  bool operator==(const LinkCalibration& o) const {
    return bandwidth_scale == o.bandwidth_scale && latency_s == o.latency_s;
  }
};

/// GEMM shape classes, by the flops of one kernel (what the efficiency curve is read at):
/// small below kGemmMediumFromFlops (launch- and latency-bound on a GPU; a d=256 model's
/// projections on a CPU core), large from kGemmLargeFromFlops (a GPU's compute-bound regime),
/// medium between.
constexpr Flops kGemmMediumFromFlops = 1e8;   // 0.1 GFLOP
constexpr Flops kGemmLargeFromFlops = 1e10;   // 10 GFLOP

struct ProfileCalibration {
  /// Which runs the figures were fitted from and with what residual; empty when not fitted.
  std::string source;
  /// Multiplies the GEMM efficiency curve: the fraction of the profiled GEMM speed that a
  /// training step achieves (> 1: faster than profiled).
  double gemm_efficiency_scale = 1.0;
  /// Per GEMM shape class, multiplies gemm_efficiency_scale for the GEMMs of that class only
  /// (YAML: gemm_shape_scale.{small, medium, large}).
  double gemm_small_scale = 1.0;
  double gemm_medium_scale = 1.0;
  double gemm_large_scale = 1.0;
  /// Multiplies the time of every memory-bound op and of the optimizer step.
  double memory_op_time_scale = 1.0;
  Seconds kernel_overhead_s = 0;  // added to every op's launch (YAML: kernel_overhead_us)
  Seconds layer_overhead_s = 0;   // added to each layer's forward and backward (YAML: layer_overhead_us)
  Seconds step_overhead_s = 0;    // added once to the step time (YAML: step_overhead_us)
  /// Added once to each stage's forward and once to its backward of every micro-batch: the
  /// framework's fixed cost per micro-batch and stage (dispatch, data, schedule bookkeeping;
  /// YAML: micro_batch_overhead_us).
  Seconds micro_batch_overhead_s = 0;
  Bytes memory_reserve_bytes = 0; // added to every device's peak memory (YAML: memory_reserve_gib)
  /// Multiplies the activations the memory model counts (kept and recomputed), fitted from
  /// measured peaks: < 1 when the framework keeps less than the formulas say (YAML:
  /// activation_memory_scale).
  double activation_memory_scale = 1.0;
  /// Per link kind: the fitted achieved bandwidth and added latency (YAML: links).
  std::map<std::string, LinkCalibration> links;

  /// Whether every figure is at its default (the YAML block is then not written).
  bool is_default() const;
};

}  // namespace whale::plan

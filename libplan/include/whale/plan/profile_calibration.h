// File: profile_calibration.h
// ProfileCalibration: the figures whale-calibrate fits from measured runs, carried by a device
// profile (YAML: the optional `calibration` block; docs/calibrate.md). The defaults leave every
// prediction as the uncalibrated profile makes it.
#pragma once

#include <string>

#include "whale/plan/units.h"

namespace whale::plan {

struct ProfileCalibration {
  /// Which runs the figures were fitted from and with what residual; empty when not fitted.
  std::string source;
  /// Multiplies the GEMM efficiency curve: the fraction of the profiled GEMM speed that a
  /// training step achieves (> 1: faster than profiled).
  double gemm_efficiency_scale = 1.0;
  /// Multiplies the time of every memory-bound op and of the optimizer step.
  double memory_op_time_scale = 1.0;
  Seconds kernel_overhead_s = 0;  // added to every op's launch (YAML: kernel_overhead_us)
  Seconds layer_overhead_s = 0;   // added to each layer's forward and backward (YAML: layer_overhead_us)
  Seconds step_overhead_s = 0;    // added once to the step time (YAML: step_overhead_us)
  Bytes memory_reserve_bytes = 0; // added to every device's peak memory (YAML: memory_reserve_gib)

  /// Whether every figure is at its default (the YAML block is then not written).
  bool is_default() const;
};

}  // namespace whale::plan

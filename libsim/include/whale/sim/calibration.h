// File: calibration.h
// How the simulator honours a profile's fitted calibration (plan::ProfileCalibration): small
// functions that op costs, the cost table and the simulator apply to their uncalibrated figures.
// With a default calibration each returns its input unchanged.
#pragma once

#include "whale/plan/device_profile.h"
#include "whale/plan/plan.h"
#include "whale/plan/units.h"

namespace whale::sim {

struct LayerCost;

/// The shape-class scale of a GEMM kernel of `kernel_flops`: gemm_small_scale below
/// plan::kGemmMediumFromFlops, gemm_large_scale from plan::kGemmLargeFromFlops,
/// gemm_medium_scale between.
double gemm_shape_scale(Flops kernel_flops, const plan::ProfileCalibration& calibration);
/// A GEMM kernel's time at the calibrated efficiency of its shape class:
/// kernel_s / (gemm_efficiency_scale x gemm_shape_scale(kernel_flops)).
Seconds calibrated_gemm_s(Seconds kernel_s, Flops kernel_flops, const plan::DeviceProfile& profile);
/// A memory-bound op's (or the optimizer step's) time: kernel_s x memory_op_time_scale.
Seconds calibrated_memory_op_s(Seconds kernel_s, const plan::DeviceProfile& profile);
/// The fixed cost of one op: kernel_launch_s + the fitted kernel_overhead_s.
Seconds op_launch_s(const plan::DeviceProfile& profile);
/// Adds the fitted per-layer overhead once to the forward and once to the backward.
void add_layer_overhead(const plan::DeviceProfile& profile, LayerCost* cost);
/// The fitted per-step overhead of a plan: the largest among its devices' profiles.
Seconds step_overhead_s(const plan::Plan& plan);

}  // namespace whale::sim

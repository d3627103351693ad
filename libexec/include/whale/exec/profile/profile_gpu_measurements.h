// File: profile_gpu_measurements.h
// The raw figures of a GPU probe (GEMM times per dtype, copy times, launch overhead, op-class
// times, free memory) and the one host function that turns them into a DeviceProfile, so that
// the arithmetic is tested on machines without a GPU.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "whale/plan/device_profile.h"
#include "whale/plan/units.h"

namespace whale::exec {

/// One timed operation: `size` (GEMM: flops 2*m*n*k; memory: bytes read plus written) in
/// `time_s` (the median of its timed runs).
struct TimedSize {
  double size = 0;
  Seconds time_s = 0;
};

struct GpuMeasurements {
  std::string name;                                          // the profile name
  std::string source;                                        // how it was measured
  Bytes memory_bytes = 0;                                    // free device memory
  std::map<plan::Precision, std::vector<TimedSize>> gemm;    // per dtype, any size order
  std::vector<TimedSize> copy;                               // device-to-device copies
  Seconds kernel_launch_s = 0;                               // one empty kernel launch
  /// Op classes (profile key -> bytes as the model counts them and their time).
  std::map<std::string, TimedSize> op_classes;
  /// whale-run's flash attention per head size: the forward FLOPs as the model counts them
  /// (plan::FlashAttentionRate) with the forward's time, and the backward's time.
  struct FlashAttentionTimes {
    int head_size = 0;
    Flops forward_flops = 0;
    Seconds forward_s = 0, backward_s = 0;
  };
  std::vector<FlashAttentionTimes> flash_attention;  // increasing head sizes; may be empty
};

/// The profile of `m`: kind "gpu"; per dtype the peak is the best GEMM throughput and the
/// curve its efficiency at each size; the memory bandwidth is the largest copy's throughput
/// (no cache holds it) and the memory curve each copy's fraction of it (capped at 1);
/// op_bandwidth_bytes_per_s[c] = size / time of each op class; flash_attention's rates are the
/// forward FLOPs over the forward's time and twice them over the backward's.
/// Its framework_memory is whale_run_cuda_memory(): a measured profile describes the device for
/// whale-run. Precondition: at least one GEMM of one dtype and one copy, all times positive.
plan::DeviceProfile gpu_profile_from(const GpuMeasurements& m);

/// What whale-run's CUDA backend holds beyond the model's tensors: the device reserve it leaves
/// outside its arena (gpu::kDeviceReserveBytes), no allocator slack, flash attention.
plan::FrameworkMemory whale_run_cuda_memory();

}  // namespace whale::exec

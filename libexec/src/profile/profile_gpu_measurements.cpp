// File: profile_gpu_measurements.cpp
// gpu_profile_from: peaks, efficiency curves and op-class bandwidths from a GPU probe's times.
#include "whale/exec/profile/profile_gpu_measurements.h"

#include <algorithm>

#include "backend/gpu_host/arena_size.h"
#include "whale/exec/profile/profile_statistics.h"

namespace whale::exec {
namespace {

/// Sizes and throughputs (size / time) of `samples`.
void throughputs(const std::vector<TimedSize>& samples, std::vector<double>* sizes,
                 std::vector<double>* achieved) {
  for (const TimedSize& s : samples) {
    sizes->push_back(s.size);
    achieved->push_back(s.size / s.time_s);
  }
}

}  // namespace

plan::FrameworkMemory whale_run_cuda_memory() {
  plan::FrameworkMemory memory;
  memory.reserve_bytes = static_cast<double>(gpu::kDeviceReserveBytes);
  memory.allocator_slack_fraction = 0;
  memory.attention = plan::AttentionImplementation::flash;
  memory.stage_buffer_cache = true;   // the same stage modules as on the CPU
  memory.dropout_masks_kept = false;  // masks drawn again from each element's place
  memory.sharded_gradients_held_whole = true;  // the flat gradient buffer stays whole under ZeRO-2
  memory.master_weights_held_whole = true;     // and the flat fp32 values under ZeRO
  memory.source =
      "whale-run's CUDA backend: its arena holds every tensor (no caching allocator's slack), "
      "its attention keeps one fp32 log-sum-exp per row (flash), its stage modules cache their "
      "micro-batch activations and block gradient buffers (stage_buffer_cache), its dropout "
      "masks are drawn again in the backward (dropout_masks_kept false), its flat gradient "
      "buffer stays whole under ZeRO-2 (sharded_gradients_held_whole) and its fp32 values "
      "under ZeRO (master_weights_held_whole), and the CUDA "
      "context, NCCL, cuBLAS and CUPTI keep the backend's device reserve outside the arena";
  return memory;
}

plan::DeviceProfile gpu_profile_from(const GpuMeasurements& m) {
  plan::DeviceProfile profile;
  profile.name = m.name;
  profile.kind = "gpu";
  profile.source = m.source;
  profile.memory_bytes = m.memory_bytes;
  profile.kernel_launch_s = m.kernel_launch_s;
  for (const auto& [precision, samples] : m.gemm) {
    std::vector<double> flops, achieved;
    throughputs(samples, &flops, &achieved);
    const double peak = max_value(achieved);
    profile.peak_flops_per_s[precision] = peak;
    profile.gemm_efficiency[precision] = gemm_efficiency_curve(flops, achieved, peak);
  }
  std::vector<TimedSize> copies = m.copy;
  std::sort(copies.begin(), copies.end(),
            [](const TimedSize& a, const TimedSize& b) { return a.size < b.size; });
  std::vector<double> bytes, achieved;
  throughputs(copies, &bytes, &achieved);
  profile.memory_bandwidth_bytes_per_s = achieved.back();
  profile.memory_efficiency = efficiency_curve(bytes, achieved, achieved.back());
  for (const auto& [name, timed] : m.op_classes)
    profile.op_bandwidth_bytes_per_s[name] = timed.size / timed.time_s;
  for (const GpuMeasurements::FlashAttentionTimes& f : m.flash_attention)
    profile.flash_attention.rates.push_back(
        {f.head_size, f.forward_flops / f.forward_s, 2.0 * f.forward_flops / f.backward_s});
  profile.framework_memory = whale_run_cuda_memory();
  return profile;
}

}  // namespace whale::exec

// File: device_profile.h
// DeviceProfile: what one device model can do (capacity, peaks, achieved-efficiency curves).
// Loaded from profiles/<name>.yaml; whale-profile writes the same schema.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "whale/plan/flash_attention_rates.h"
#include "whale/plan/framework_memory.h"
#include "whale/plan/layer_times.h"
#include "whale/plan/precision.h"
#include "whale/plan/profile_calibration.h"
#include "whale/plan/units.h"

namespace whale::plan {

/// One measured point: at problem `size` the device achieves `efficiency` (0..1] of its peak.
struct EfficiencyPoint {
  double size = 0;        // GEMM: flops of one GEMM (2*m*n*k); memory ops: bytes moved
  double efficiency = 0;  // fraction of the peak
};

/// Achieved efficiency as a function of problem size: piecewise linear in log(size),
/// clamped to the first and last point outside the measured range. Points are sorted by size.
class EfficiencyCurve {
 public:
  EfficiencyCurve() = default;
  explicit EfficiencyCurve(std::vector<EfficiencyPoint> points);
  /// Efficiency at `size`; 1.0 when the curve is empty.
  double at(double size) const;
  const std::vector<EfficiencyPoint>& points() const { return points_; }
  bool empty() const { return points_.empty(); }

 private:
  std::vector<EfficiencyPoint> points_;
};

/// The cache state of the ops (CPU profiles): whale-profile times each GEMM and op class twice,
/// from cold caches (the main curves) and with its operands resident (warm, below), and records
/// the last-level cache one device may fill. libsim prices a device's ops between the two by
/// the weight bytes its layers hold (cache_working_set.h). Empty on profiles without the block
/// (the GPU profiles), whose ops are priced cold as before.
struct CacheResidency {
  Bytes cache_bytes_per_device = 0;  // YAML: cache.last_level_cache_mib_per_device
  std::map<Precision, EfficiencyCurve> warm_gemm_efficiency;  // YAML: cache.warm_gemm_efficiency
  std::map<std::string, BytesPerSecond> warm_op_bandwidth_bytes_per_s;  // YAML: cache.warm_op_bandwidth_gbytes_per_s
  std::map<std::string, BytesPerSecond> warm_op_backward_bandwidth_bytes_per_s;  // YAML: cache.warm_op_backward_bandwidth_gbytes_per_s
  /// The share of a step's op time that runs at the warm figures, by the working set a device
  /// walks (size: bytes; efficiency: the warm fraction, 0 to 1), as whale-profile measured it
  /// (a walk of GEMM blocks forward and back, as a training step walks its layers). Empty:
  /// libsim's fixed ramp against cache_bytes_per_device (cache_working_set.h).
  EfficiencyCurve warm_fraction_by_working_set;  // YAML: cache.warm_fraction_by_working_set (optional)
  bool empty() const { return cache_bytes_per_device <= 0; }
};

struct DeviceProfile {
  std::string name;          // device model name, e.g. "a100-sxm4-80gb"; the file stem
  std::string kind;          // "gpu" or "cpu"
  std::string source;        // where the figures come from (datasheet, measured by whale-profile)
  Bytes memory_bytes = 0;    // usable device memory (YAML: memory_gib)
  BytesPerSecond memory_bandwidth_bytes_per_s = 0;  // YAML: memory_bandwidth_gbytes_per_s
  std::map<Precision, FlopsPerSecond> peak_flops_per_s;   // YAML: peak_tflops.{fp32,...}
  std::map<Precision, EfficiencyCurve> gemm_efficiency;   // YAML: gemm_efficiency.{bf16,...}
  EfficiencyCurve memory_efficiency;                      // YAML: memory_efficiency
  Seconds kernel_launch_s = 0;                            // YAML: kernel_launch_us
  /// Emulated slowdown (>= 1): whale-run stretches every compute op of a device with this
  /// profile by this factor, and the peaks above already describe the slowed device.
  double slowdown_factor = 1.0;                           // YAML: slowdown_factor (optional)
  /// Measured effective bandwidth of op classes that are compute-bound on this device (a CPU
  /// core evaluates tanh, exp and sqrt far slower than it streams memory), keyed by a class
  /// name that a model's memory op names contain ("gelu", "layernorm", "softmax", ...) or
  /// "adamw" for the optimizer step. Bytes are counted as the model counts them (the op's
  /// reads plus writes, forward). The figure prices the forward, and the backward as well
  /// where op_backward_bandwidth_bytes_per_s lacks the class (profiles written before the two
  /// were measured apart hold the mean of both passes here).
  std::map<std::string, BytesPerSecond> op_bandwidth_bytes_per_s;  // YAML: op_bandwidth_gbytes_per_s (optional)
  /// The backward of a class of op_bandwidth_bytes_per_s: the forward's bytes (as the model
  /// counts them) over the backward's time, which differs from the forward's (a layernorm's
  /// backward computes two reductions and the input gradient: about 9x its forward on a core).
  std::map<std::string, BytesPerSecond> op_backward_bandwidth_bytes_per_s;  // YAML: op_backward_bandwidth_gbytes_per_s (optional)
  /// What the training framework holds beyond the tensors, and whether it fuses attention;
  /// default_framework_memory(kind) when the YAML has no block.
  FrameworkMemory framework_memory;                                // YAML: framework_memory (optional)
  /// Figures fitted from measured runs by whale-calibrate (optional; defaults change nothing).
  ProfileCalibration calibration;                                  // YAML: calibration (optional)
  /// Measured per-layer times (whale-calibrate --layer-times); empty: the curves price every layer.
  LayerTimes layer_times;                                          // YAML: layer_times (optional)
  /// Warm timings and the cache size (optional; CPU profiles of whale-profile).
  CacheResidency cache;                                            // YAML: cache (optional)
  /// The framework's flash-attention rates per head size (GPU profiles of whale-profile: its
  /// own kernels); empty: the attention core is priced as GEMMs plus the softmax's bytes.
  FlashAttentionRates flash_attention;                             // YAML: flash_attention_tflops (optional)

  /// Peak of `p`, exactly: no fallback to another precision (a plan's GEMMs are priced at
  /// effective_gemm_precision, framework_precision.h, which applies the documented fallbacks).
  /// Throws whale::Error when the profile has no peak for `p`.
  FlopsPerSecond peak(Precision p) const;
  /// The GEMM efficiency curve of `p`, exactly; an empty curve if none.
  const EfficiencyCurve& gemm_curve(Precision p) const;
  /// The op_bandwidth_bytes_per_s of the first class (in key order) that `op_name` contains;
  /// 0 when none does (the op is then memory-bound: bandwidth x memory_efficiency).
  BytesPerSecond op_bandwidth(const std::string& op_name) const;
  /// The backward's figure of the class op_bandwidth finds for `op_name`: its
  /// op_backward_bandwidth_bytes_per_s, else its op_bandwidth_bytes_per_s; 0 when none.
  BytesPerSecond op_backward_bandwidth(const std::string& op_name) const;
};

/// Loads and validates one profile file. Throws whale::Error naming the file and field.
DeviceProfile load_device_profile(const std::string& path);
/// Writes `profile` in exactly the schema load_device_profile reads. Throws whale::Error if the
/// path cannot be written.
void save_device_profile(const DeviceProfile& profile, const std::string& path);

/// Finds profiles by model name in a directory: `<dir>/<name>.yaml`.
/// The default directory of the shipped profiles, the first of: $WHALE_PROFILES when set and
/// not empty; ../share/whale/profiles next to the running executable (an installed whale) when
/// it exists; the source tree's profiles/ (WHALE_DEFAULT_PROFILES_DIR, set at configure time).
std::string default_profiles_dir();

}  // namespace whale::plan

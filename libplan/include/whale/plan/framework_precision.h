// File: framework_precision.h
// How a training framework applies a plan's precision (TF32 matrix multiplies under fp32, the
// precision of the gradient reduction, fp32 master weights), and the precision each device
// model really runs its GEMMs in: the effective GEMM precision (docs/profile.md#fallbacks).
#pragma once

#include <string>
#include <vector>

#include "whale/plan/cluster.h"
#include "whale/plan/device_profile.h"
#include "whale/plan/precision.h"

namespace whale::plan {

struct Plan;

/// The precision gradients are accumulated in and reduced across data-parallel replicas:
/// `training` (DeepSpeed: the training dtype) or `fp32` (Megatron-LM's default, with its fp32
/// gradient accumulation).
enum class GradReducePrecision { training, fp32 };
/// Whether mixed-precision (fp16, bf16) training keeps an fp32 master copy of the weights in
/// its optimizer state (`fp32`, as Megatron-LM and DeepSpeed do) or not (`none`, pure bf16).
enum class MasterWeights { fp32, none };

/// "training", "fp32".
const char* to_string(GradReducePrecision g);
/// Parses the names above; returns false on anything else.
bool parse_grad_reduce_precision(const std::string& text, GradReducePrecision* out);
/// "fp32", "none".
const char* to_string(MasterWeights m);
/// Parses the names above; returns false on anything else.
bool parse_master_weights(const std::string& text, MasterWeights* out);

/// The framework's precision settings of a training run (model training section, plan).
struct FrameworkPrecision {
  /// fp32 training runs its matrix multiplies as TF32 where the device has TF32 (a tf32 peak in
  /// its profile), as torch.backends.cuda.matmul.allow_tf32 and NVIDIA's PyTorch containers do.
  /// No effect on other precisions. YAML: allow_tf32 (optional, default false).
  bool allow_tf32 = false;
  GradReducePrecision grad_reduce = GradReducePrecision::training;  // YAML: grad_reduce_precision
  MasterWeights master_weights = MasterWeights::fp32;               // YAML: master_weights

  bool operator==(const FrameworkPrecision& o) const {
    return allow_tf32 == o.allow_tf32 && grad_reduce == o.grad_reduce &&
           master_weights == o.master_weights;
  }
  bool operator!=(const FrameworkPrecision& o) const { return !(*this == o); }
};

/// Bytes of one gradient element as accumulated and reduced across replicas: 4 under
/// grad_reduce fp32, else bytes_per_element(training).
int gradient_bytes_per_element(Precision training, const FrameworkPrecision& framework);

/// The GEMM precision that training asks for: tf32 for fp32 with allow_tf32, else `training`.
Precision requested_gemm_precision(Precision training, const FrameworkPrecision& framework);

/// The precision `profile`'s GEMMs really run in, used to price them (peak and efficiency
/// curve): the requested one when the profile has a peak for it, else its documented fallback,
/// fp32 for tf32 (no TF32 tensor cores before Ampere) and for bf16 (bf16 emulated through fp32
/// on GPUs without bf16 units). Throws whale::Error (the profile's missing peak, with its hint)
/// when the profile has neither.
Precision effective_gemm_precision(Precision training, const FrameworkPrecision& framework,
                                   const DeviceProfile& profile);

/// The precision Megatron-LM and DeepSpeed train in on `profile` when the plan asks for
/// `training`: fp16 with dynamic loss scaling for bf16 where the device has fp16 units but no
/// bf16 ones (Volta, Turing: V100, T4), else `training` itself.
Precision framework_training_precision(Precision training, const DeviceProfile& profile);

/// The device models among `device_ids` of `cluster` (sorted by name) on which the frameworks
/// train `training` in another precision (framework_training_precision).
std::vector<std::string> models_trained_otherwise(Precision training, const Cluster& cluster,
                                                  const std::vector<int>& device_ids);

/// One line for each device model that runs a stage of `plan` (sorted by name) whose effective
/// GEMM precision differs from the plan's precision, e.g.
/// "v100-sxm2-32gb: bf16 not supported, GEMMs priced as fp32 (docs/profile.md#fallbacks)" or
/// "a100-sxm4-80gb: fp32 GEMMs run as tf32 (allow_tf32)". Empty when every device runs the
/// plan's precision.
std::vector<std::string> gemm_precision_notes(const Plan& plan);

}  // namespace whale::plan

// File: framework_precision.cpp
// The framework's precision settings and the effective GEMM precision of a device model.
#include "whale/plan/framework_precision.h"

#include <set>

#include "whale/plan/plan.h"

namespace whale::plan {
namespace {

// Documented fallbacks (docs/profile.md#fallbacks): tf32 and bf16 run as fp32 where a device
// has no unit for them; fp32 and fp16 have none.
// - tf32: only Ampere and later have TF32 tensor cores; elsewhere float32 matrix multiplies run
//   in full fp32 whatever the setting (PyTorch notes "CUDA semantics", TensorFloat-32 section;
//   TensorFlow's enable_tensor_float_32_execution documentation says the same).
// - bf16: Volta and Turing have no bf16 tensor cores. PyTorch still runs bf16 matmuls there
//   (torch.cuda.is_bf16_supported() is False on a V100, yet torch.matmul works: PyTorch issue
//   "use bfloat16 on nvidia V100 GPU"), without tensor cores; XLA converts them to fp32 matmuls
//   on a T4, measured at about (at best) the fp32 rate (JAX issue "BF16 matmul slower than F32
//   matmul on T4 GPU"). Pricing them at the fp32 peak and curve is thus an upper bound on speed.
bool fallback_of(Precision p, Precision* out) {
  if (p != Precision::tf32 && p != Precision::bf16) return false;
  *out = Precision::fp32;
  return true;
}

bool has_peak(const DeviceProfile& profile, Precision p) {
  return profile.peak_flops_per_s.count(p) > 0;
}

}  // namespace

const char* to_string(GradReducePrecision g) {
  return g == GradReducePrecision::fp32 ? "fp32" : "training";
}

bool parse_grad_reduce_precision(const std::string& text, GradReducePrecision* out) {
  for (GradReducePrecision g : {GradReducePrecision::training, GradReducePrecision::fp32}) {
    if (text == to_string(g)) {
      *out = g;
      return true;
    }
  }
  return false;
}

const char* to_string(MasterWeights m) { return m == MasterWeights::none ? "none" : "fp32"; }

bool parse_master_weights(const std::string& text, MasterWeights* out) {
  for (MasterWeights m : {MasterWeights::fp32, MasterWeights::none}) {
    if (text == to_string(m)) {
      *out = m;
      return true;
    }
  }
  return false;
}

int gradient_bytes_per_element(Precision training, const FrameworkPrecision& framework) {
  return framework.grad_reduce == GradReducePrecision::fp32 ? bytes_per_element(Precision::fp32)
                                                            : bytes_per_element(training);
}

Precision requested_gemm_precision(Precision training, const FrameworkPrecision& framework) {
  return training == Precision::fp32 && framework.allow_tf32 ? Precision::tf32 : training;
}

Precision effective_gemm_precision(Precision training, const FrameworkPrecision& framework,
                                   const DeviceProfile& profile) {
  const Precision requested = requested_gemm_precision(training, framework);
  Precision fallback;
  if (!has_peak(profile, requested) && fallback_of(requested, &fallback) &&
      has_peak(profile, fallback)) {
    return fallback;
  }
  profile.peak(requested);  // throws the profile's clear error when it has no peak
  return requested;
}

Precision framework_training_precision(Precision training, const DeviceProfile& profile) {
  // Megatron-LM and DeepSpeed refuse bf16 where torch.cuda.is_bf16_supported() is false and
  // their users train fp16 with loss scaling there, as Megatron-LM's and DeepSpeed's V100
  // recipes do (--fp16; "fp16": {"enabled": true}).
  if (training == Precision::bf16 && !has_peak(profile, Precision::bf16) && has_peak(profile, Precision::fp16))
    return Precision::fp16;
  return training;
}

std::vector<std::string> models_trained_otherwise(Precision training, const Cluster& cluster,
                                                  const std::vector<int>& device_ids) {
  std::set<std::string> models;
  for (int id : device_ids) {
    const std::string& model = cluster.devices.at(id).model;
    if (framework_training_precision(training, cluster.profiles.at(model)) != training) models.insert(model);
  }
  return {models.begin(), models.end()};
}

std::vector<std::string> gemm_precision_notes(const Plan& plan) {
  std::set<std::string> models;
  for (const Stage& stage : plan.stages) {
    for (int id : stage.devices) models.insert(plan.cluster.devices.at(id).model);
  }
  const Precision requested = requested_gemm_precision(plan.precision, plan.framework_precision);
  std::vector<std::string> notes;
  for (const std::string& model : models) {
    const Precision effective =
        effective_gemm_precision(plan.precision, plan.framework_precision, plan.cluster.profiles.at(model));
    if (effective == plan.precision) continue;
    if (effective == requested) {
      notes.push_back(model + ": " + to_string(plan.precision) + " GEMMs run as " +
                      to_string(effective) + " (allow_tf32)");
    } else {
      notes.push_back(model + ": " + to_string(requested) + " not supported, GEMMs priced as " +
                      to_string(effective) + " (docs/profile.md#fallbacks)");
    }
  }
  return notes;
}

}  // namespace whale::plan

// File: precision_pricing.cpp
// priced_alike and standing_precision (precision_pricing.h).
#include "whale/plan/precision_pricing.h"

#include <tuple>

#include "whale/plan/error.h"
#include "whale/plan/framework_precision.h"
#include "whale/plan/input_equality.h"
#include "whale/plan/model_state_bytes.h"

namespace whale::plan {
namespace {

// The warm curve of `p` (cache_warmth.h), or none.
const EfficiencyCurve* warm_curve(const DeviceProfile& profile, Precision p) {
  const auto it = profile.cache.warm_gemm_efficiency.find(p);
  return it == profile.cache.warm_gemm_efficiency.end() ? nullptr : &it->second;
}

bool same_warm_curve(const DeviceProfile& profile, Precision a, Precision b) {
  const EfficiencyCurve* x = warm_curve(profile, a);
  const EfficiencyCurve* y = warm_curve(profile, b);
  return x == y || (x && y && *x == *y);
}

}  // namespace

bool priced_alike(const DeviceProfile& profile, const Training& training, Precision a, Precision b) {
  if (a == b) return true;
  const FrameworkPrecision& framework = training.framework_precision;
  try {
    const StateBytesPerParam sa = state_bytes_per_param(a, training.optimizer, framework);
    const StateBytesPerParam sb = state_bytes_per_param(b, training.optimizer, framework);
    if (std::tie(sa.weights, sa.gradients, sa.optimizer) != std::tie(sb.weights, sb.gradients, sb.optimizer)) {
      return false;
    }
    const Precision ga = effective_gemm_precision(a, framework, profile);
    const Precision gb = effective_gemm_precision(b, framework, profile);
    return profile.peak(ga) == profile.peak(gb) && profile.gemm_curve(ga) == profile.gemm_curve(gb) &&
           same_warm_curve(profile, ga, gb);
  } catch (const Error&) {
    return false;   // a precision the profile cannot price (no peak), or an unknown optimizer
  }
}

Precision standing_precision(const Cluster& cluster, const std::vector<std::string>& device_models,
                             const Training& training) {
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::fp16, Precision::bf16}) {
    if (p == training.precision) break;
    bool alike = true;
    for (const std::string& m : device_models) {
      alike = alike && priced_alike(cluster.profiles.at(m), training, p, training.precision);
    }
    if (alike) return p;
  }
  return training.precision;
}

}  // namespace whale::plan

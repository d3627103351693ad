// File: cache_warmth.h
// A device profile as ops see it when part of their time runs with the operands resident in the
// last-level cache: the blend of the profile's cold curves and its warm ones (CacheResidency).
#pragma once

#include "whale/plan/device_profile.h"

namespace whale::plan {

/// `profile` with its GEMM curves and op-class bandwidths replaced by the time-weighted blend of
/// cold (the main figures) and warm (profile.cache): an op that takes t_cold cold and t_warm warm
/// takes warm_fraction * t_warm + (1 - warm_fraction) * t_cold. A curve's blend is exact at
/// every size either curve measured (1 / (f / e_warm + (1 - f) / e_cold)) and interpolated
/// between them as any curve is; a precision or op class without a warm figure stays cold.
/// warm_fraction is clamped to [0, 1]; 0, or a profile without a cache block, returns the
/// profile unchanged.
DeviceProfile with_warm_fraction(const DeviceProfile& profile, double warm_fraction);

}  // namespace whale::plan

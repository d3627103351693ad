// File: profile_cpu_op_bandwidth.h
// Private: measures the effective bandwidth of the op classes that are compute-bound on a CPU
// core (GELU, layernorm, the attention softmax, cross-entropy, AdamW, SGD) for DeviceProfile.
#pragma once

#include "whale/exec/backend/backend.h"
#include "whale/exec/profile/profile_device_prober.h"
#include "whale/exec/profile/profile_cache_flusher.h"
#include "whale/exec/profile/profile_timer.h"
#include "whale/plan/device_profile.h"

namespace whale::exec {

/// Fills profile->op_bandwidth_bytes_per_s and op_backward_bandwidth_bytes_per_s (cold) and
/// their warm counterparts in profile->cache: for each class, the bytes the model counts for the
/// op's forward (libplan/src/model_families.cpp: 2 x elements x 4 for elementwise ops; the
/// optimizer as libsim counts it, 28 bytes per fp32 AdamW parameter, 20 per SGD one) divided by the op's
/// measured forward time, and by its backward time, so that libsim prices each pass as it ran
/// (a layernorm's backward takes about 9x its forward on a core). The softmax class is the
/// attention core minus its GEMMs as the profile's curves price them (so both GEMM curves,
/// cold and warm, must be measured first). Sizes are those of a d=256 GPT layer. Cold: every call starts from caches
/// that `flusher` evicted, but for the input the op before it has just written (forward: its
/// input; backward: the output gradient); the optimizers are all cold. Warm: the same, after
/// `warm_flusher` (CacheFlusher::of_private_caches) evicted the private caches alone, so that
/// the other operands come from the last-level cache.
void measure_cpu_op_bandwidth(Backend& backend, bool quick, const TimerOptions& timer,
                              CacheFlusher& flusher, CacheFlusher& warm_flusher, const ProgressFn& progress,
                              plan::DeviceProfile* profile);

}  // namespace whale::exec

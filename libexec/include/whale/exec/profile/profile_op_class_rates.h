// File: profile_op_class_rates.h
// The figures a CPU profile records for an op class that is compute-bound on a core (GELU,
// layernorm, the attention softmax, cross-entropy, AdamW) from the class's measured pass times.
#pragma once

#include "whale/plan/units.h"

namespace whale::exec {

/// DeviceProfile::op_bandwidth_bytes_per_s and op_backward_bandwidth_bytes_per_s of one class:
/// the bytes the model counts for the op's forward over a pass's time; 0 where not recorded.
struct OpClassRates {
  BytesPerSecond forward = 0, backward = 0;
};

/// The class's figures from its measured forward and backward times. libsim charges the GEMMs
/// inside the class (`gemm_s` a pass, priced by the profile's curve) forward once and backward
/// twice, and the class's bytes once each way, each pass at its own figure: forward
/// model_bytes / (forward_s - gemm_s), backward model_bytes / (backward_s - 2 gemm_s). Where a
/// pass has nothing left after its GEMMs (the curve prices them above what the pass took), the
/// mean of the two passes prices both, recorded as the forward's alone; nothing at all when even
/// the sum has nothing left. An op without a backward (`has_backward` false: AdamW) gets the
/// forward's figure alone.
OpClassRates op_class_rates(Bytes model_bytes, Seconds forward_s, Seconds backward_s,
                            Seconds gemm_s, bool has_backward);

}  // namespace whale::exec

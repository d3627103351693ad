// File: loss_scaler.h
// LossScaler: dynamic loss scaling for fp16 training. The loss gradient is multiplied by the
// scale so that small gradients survive fp16's narrow range; the gradients are divided by it
// before the optimizer. A step whose gradients hold an inf or NaN is skipped and the scale
// halved; after `growth_interval` consecutive good steps the scale doubles.
#pragma once

#include <cstdint>

namespace whale::exec {

/// DeepSpeed's fp16 defaults (deepspeed/runtime/constants.py: initial_scale_power 16,
/// loss_scale_window 1000, min_loss_scale 1), with a hysteresis of 1: every overflow halves the
/// scale at once (DeepSpeed's default hysteresis 2 waits for a second one).
struct LossScalerConfig {
  double initial_scale = 65536.0;  // 2^16
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 1000;  // good steps in a row before the scale grows
  double min_scale = 1.0;
};

class LossScaler {
 public:
  /// A disabled scaler (fp32, bf16) has scale 1 and never skips.
  LossScaler(bool enabled, const LossScalerConfig& config = LossScalerConfig());

  bool enabled() const { return enabled_; }
  /// The factor of this step's loss gradient (1 when disabled).
  double scale() const { return scale_; }
  /// Ends a step whose gradients were `finite` (on every rank) or not. Returns true when the
  /// optimizer should step (after dividing the gradients by the scale it used), false when
  /// the step is skipped. Updates the scale for the next step.
  bool update(bool finite);
  /// Steps skipped so far.
  int64_t skipped_steps() const { return skipped_; }
  /// Consecutive good steps since the last change of the scale.
  int64_t good_steps() const { return good_; }

  /// Restores the state of a checkpoint (scale, good steps, skipped steps).
  void restore(double scale, int64_t good_steps, int64_t skipped_steps);

 private:
  bool enabled_;
  LossScalerConfig config_;
  double scale_;
  int64_t good_ = 0;
  int64_t skipped_ = 0;
};

}  // namespace whale::exec

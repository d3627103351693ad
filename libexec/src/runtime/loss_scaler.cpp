// File: loss_scaler.cpp
// LossScaler's update rule: halve and skip on overflow, grow after a window of good steps.
#include "whale/exec/runtime/loss_scaler.h"

#include <algorithm>

namespace whale::exec {

LossScaler::LossScaler(bool enabled, const LossScalerConfig& config)
    : enabled_(enabled), config_(config), scale_(enabled ? config.initial_scale : 1.0) {}

bool LossScaler::update(bool finite) {
  if (!enabled_) return true;
  if (!finite) {
    scale_ = std::max(config_.min_scale, scale_ * config_.backoff_factor);
    good_ = 0;
    ++skipped_;
    return false;
  }
  if (++good_ == config_.growth_interval) {
    scale_ *= config_.growth_factor;
    good_ = 0;
  }
  return true;
}

void LossScaler::restore(double scale, int64_t good_steps, int64_t skipped_steps) {
  scale_ = scale;
  good_ = good_steps;
  skipped_ = skipped_steps;
}

}  // namespace whale::exec

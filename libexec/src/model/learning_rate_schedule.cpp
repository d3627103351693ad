// File: learning_rate_schedule.cpp
// LearningRateSchedule::at, Megatron-LM's get_lr (megatron/core/optimizer_param_scheduler.py)
// with init_lr 0.
#include "whale/exec/model/learning_rate_schedule.h"

#include <cmath>

namespace whale::exec {
namespace {
constexpr double kPi = 3.14159265358979323846;
}  // namespace

double LearningRateSchedule::at(int64_t updates) const {
  if (warmup_steps > 0 && updates <= warmup_steps)
    return peak * static_cast<double>(updates) / static_cast<double>(warmup_steps);
  if (decay == Decay::constant) return peak;
  if (updates > decay_steps) return min;
  const double ratio = static_cast<double>(updates - warmup_steps) / static_cast<double>(decay_steps - warmup_steps);
  const double coefficient = decay == Decay::linear ? 1.0 - ratio : 0.5 * (std::cos(kPi * ratio) + 1.0);
  return min + coefficient * (peak - min);
}

}  // namespace whale::exec

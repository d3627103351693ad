// File: learning_rate_schedule.h
// The learning rate of each optimizer update, as Megatron-LM's OptimizerParamScheduler.get_lr
// gives it: a linear warm-up from 0 to the peak, then a linear or cosine decay to the minimum
// over the decay steps (constant: the peak throughout), the minimum after them.
#pragma once

#include <cstdint>

namespace whale::exec {

struct LearningRateSchedule {
  enum class Decay { constant, linear, cosine };
  /// A constant rate `peak` (no warm-up, no decay).
  LearningRateSchedule(double peak = 1e-3) : peak(peak) {}  // NOLINT: a rate reads as one

  double peak;
  double min = 0.0;           // reached at decay_steps (linear, cosine)
  int64_t warmup_steps = 0;   // updates of the linear warm-up from 0
  int64_t decay_steps = 0;    // updates from the first to the end of the decay; > warmup_steps
  Decay decay = Decay::constant;

  /// The rate of the update that follows `updates` earlier ones (Megatron-LM's get_lr at
  /// num_steps = updates): during warm-up peak x updates / warmup_steps, so the first update
  /// of a warmed-up run takes 0 as Megatron-LM's does; after it the peak (constant) or the
  /// decay from peak to min by (updates - warmup_steps) / (decay_steps - warmup_steps): linear
  /// 1 - r, cosine (1 + cos(pi r)) / 2; min past decay_steps.
  double at(int64_t updates) const;
};

}  // namespace whale::exec

// File: run_learning_rate.h
// whale-run's learning-rate options (--lr, --min-lr, --lr-warmup-steps, --lr-decay-style,
// --lr-decay-steps) as the schedule the optimizers follow.
#pragma once

#include "whale/exec/model/learning_rate_schedule.h"
#include "whale/exec/runtime/run_training.h"

namespace whale::exec {

/// The schedule of `options`: the decay ends at lr_decay_steps, or at `steps` where that is 0.
/// Throws whale::Error naming the option for an unknown decay style, a decay that ends at or
/// before the warm-up does, or a minimum above the peak.
LearningRateSchedule learning_rate_schedule(const RunOptions& options);

}  // namespace whale::exec

// File: run_learning_rate.cpp
// learning_rate_schedule: whale-run's options checked and turned into a LearningRateSchedule.
#include "runtime/run_learning_rate.h"

#include <string>

#include "whale/plan/error.h"

namespace whale::exec {

LearningRateSchedule learning_rate_schedule(const RunOptions& options) {
  LearningRateSchedule schedule(options.learning_rate);
  schedule.min = options.min_learning_rate;
  schedule.warmup_steps = options.warmup_steps;
  schedule.decay_steps = options.lr_decay_steps > 0 ? options.lr_decay_steps : options.steps;
  if (options.lr_decay_style == "constant") {
    schedule.decay = LearningRateSchedule::Decay::constant;
  } else if (options.lr_decay_style == "linear") {
    schedule.decay = LearningRateSchedule::Decay::linear;
  } else if (options.lr_decay_style == "cosine") {
    schedule.decay = LearningRateSchedule::Decay::cosine;
  } else {
    throw Error("", "--lr-decay-style", "constant, linear or cosine, got '" + options.lr_decay_style + "'");
  }
  if (schedule.min > schedule.peak)
    throw Error("", "--min-lr",
                "a rate at most --lr (" + std::to_string(schedule.peak) + "), got " + std::to_string(schedule.min),
                "the decay runs from --lr down to --min-lr");
  if (schedule.decay != LearningRateSchedule::Decay::constant && schedule.decay_steps <= schedule.warmup_steps)
    throw Error("", options.lr_decay_steps > 0 ? "--lr-decay-steps" : "--steps",
                "a decay that ends after the warm-up's " + std::to_string(schedule.warmup_steps) +
                    " steps, got its end at step " + std::to_string(schedule.decay_steps),
                "give --lr-decay-steps above --lr-warmup-steps, or fewer warm-up steps");
  return schedule;
}

}  // namespace whale::exec

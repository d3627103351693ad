// File: adamw.h
// AdamW (decoupled weight decay, bias-corrected moments) as a SlicedOptimizer; its state is the
// first and second moments of the slice.
#pragma once

#include <cstddef>
#include <vector>

#include "whale/exec/backend/backend.h"
#include "whale/exec/backend/tensor.h"
#include "whale/exec/model/learning_rate_schedule.h"
#include "whale/exec/model/sliced_optimizer.h"

namespace whale::exec {

struct AdamWConfig {
  LearningRateSchedule learning_rate;  // by the updates made (a constant 1e-3 by default)
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.0;  // decoupled, applied to the parameters ParameterView::decayed
};

class AdamW : public SlicedOptimizer {
 public:
  /// Moments start at zero, the step count at 0. `backend` must outlive it.
  AdamW(Backend& backend, std::vector<ParameterView> params, const AdamWConfig& config,
        std::size_t begin = 0, std::size_t end = static_cast<std::size_t>(-1));

  /// The moments of the slice, state_count() fp32 each, in backend memory.
  TensorView first_moment() { return m_.view(); }
  TensorView second_moment() { return v_.view(); }
  /// {first_moment, second_moment}.
  std::vector<TensorView> state() override { return {m_.view(), v_.view()}; }

 private:
  void update() override;

  Backend& backend_;
  AdamWConfig config_;
  Tensor m_, v_;  // fp32
};

}  // namespace whale::exec

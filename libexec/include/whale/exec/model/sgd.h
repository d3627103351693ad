// File: sgd.h
// SGD with momentum as PyTorch's torch.optim.SGD and Megatron-LM's --optimizer sgd take it (L2
// weight decay added to the gradient, dampening 0, no Nesterov) as a SlicedOptimizer; its
// state is the momentum buffer of the slice.
#pragma once

#include <cstddef>
#include <vector>

#include "whale/exec/backend/backend.h"
#include "whale/exec/backend/tensor.h"
#include "whale/exec/model/learning_rate_schedule.h"
#include "whale/exec/model/sliced_optimizer.h"

namespace whale::exec {

struct SgdConfig {
  LearningRateSchedule learning_rate;  // by the updates made (a constant 1e-3 by default)
  double momentum = 0.9;      // Megatron-LM's --sgd-momentum default
  double weight_decay = 0.0;  // L2, added to the gradients of the parameters ParameterView::decayed
};

class Sgd : public SlicedOptimizer {
 public:
  /// The momentum buffer starts at zero, the step count at 0. `backend` must outlive it.
  Sgd(Backend& backend, std::vector<ParameterView> params, const SgdConfig& config,
      std::size_t begin = 0, std::size_t end = static_cast<std::size_t>(-1));

  /// The momentum buffer of the slice, state_count() fp32, in backend memory.
  TensorView momentum_buffer() { return buffer_.view(); }
  /// {momentum_buffer}.
  std::vector<TensorView> state() override { return {buffer_.view()}; }

 private:
  void update() override;

  Backend& backend_;
  SgdConfig config_;
  Tensor buffer_;  // fp32
};

}  // namespace whale::exec

// File: adamw.h
// AdamW over a flat list of parameters (the concatenation of their elements, in list order),
// optionally restricted to a slice [begin, end) of it so that a sharded optimizer (ZeRO-1)
// updates only its part. Parameters not `trained` keep their values. The state (m, v, step count) is exposed for checkpoints.
#pragma once

#include <cstddef>
#include <vector>

#include "whale/exec/backend/backend.h"
#include "whale/exec/model/stage_module.h"
#include "whale/exec/backend/tensor.h"

namespace whale::exec {

struct AdamWConfig {
  double learning_rate = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.0;  // decoupled, applied to every parameter
};

class AdamW {
 public:
  /// The optimizer of elements [begin, end) of the concatenated `params` (end is clamped to
  /// the total count; the default is everything). Moments start at zero, step count at 0.
  /// `backend` and the parameters' memory must outlive it.
  AdamW(Backend& backend, std::vector<ParameterView> params, std::size_t begin = 0,
        std::size_t end = static_cast<std::size_t>(-1));

  /// Increments the step count and updates the slice's values from their gradients.
  void step(const AdamWConfig& config);

  std::size_t total_count() const { return total_; }
  std::size_t begin() const { return begin_; }
  std::size_t end() const { return end_; }
  /// The moments of the slice, (end - begin) fp32 each, in backend memory; write them to
  /// restore a checkpoint.
  TensorView first_moment() { return m_.view(); }
  TensorView second_moment() { return v_.view(); }
  std::size_t state_count() const { return end_ - begin_; }
  int step_count() const { return step_; }
  void set_step_count(int step) { step_ = step; }

 private:
  Backend& backend_;
  std::vector<ParameterView> params_;
  std::size_t total_ = 0, begin_ = 0, end_ = 0;
  Tensor m_, v_;  // fp32
  int step_ = 0;
};

}  // namespace whale::exec

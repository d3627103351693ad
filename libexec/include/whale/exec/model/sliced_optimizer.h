// File: sliced_optimizer.h
// An optimizer over a flat list of parameters (the concatenation of their elements, in list
// order), optionally restricted to a slice [begin, end) of it so that a sharded optimizer
// (ZeRO-1/2) updates only its part. Parameters not `trained` keep their values. Its state
// (fp32 buffers of the slice's size, and the step count) is exposed for checkpoints. AdamW
// (adamw.h) and SGD with momentum (sgd.h) are the two kinds; make_optimizer (optimizer.h)
// makes the one a model trains with.
#pragma once

#include <cstddef>
#include <vector>

#include "whale/exec/backend/tensor.h"
#include "whale/exec/model/stage_module.h"

namespace whale::exec {

class SlicedOptimizer {
 public:
  /// The optimizer of elements [begin, end) of the concatenated `params` (end is clamped to
  /// the total count; the default is everything). The parameters' memory must outlive it.
  explicit SlicedOptimizer(std::vector<ParameterView> params, std::size_t begin = 0,
                           std::size_t end = static_cast<std::size_t>(-1));
  virtual ~SlicedOptimizer() = default;
  SlicedOptimizer(const SlicedOptimizer&) = delete;
  SlicedOptimizer& operator=(const SlicedOptimizer&) = delete;

  /// Increments the step count and updates the slice's trained values from their gradients,
  /// at the learning rate of the updates made before (the count loaded from a checkpoint
  /// included; a step a loss scaler skips makes no update).
  void step() {
    ++step_;
    update();
  }

  std::size_t total_count() const { return total_; }
  std::size_t begin() const { return begin_; }
  std::size_t end() const { return end_; }
  /// Elements of each state buffer: the slice's.
  std::size_t state_count() const { return end_ - begin_; }
  /// The state buffers (fp32, state_count() each, in backend memory) in a fixed order; write
  /// them to restore a checkpoint.
  virtual std::vector<TensorView> state() = 0;
  int step_count() const { return step_; }
  void set_step_count(int step) { step_ = step; }

  /// One run of a trained parameter inside the slice: the parameter, its values and gradients
  /// there, and where the run starts in the state buffers.
  struct Run {
    const ParameterView* parameter;  // of the list this optimizer keeps
    TensorView value;
    TensorView gradient;
    std::size_t state_offset;
  };
  /// The runs of the trained parameters that overlap the slice, in list order: what step()
  /// updates.
  std::vector<Run> runs() const;

 protected:
  /// The update itself, after step() has counted the step.
  virtual void update() = 0;

 private:
  std::vector<ParameterView> params_;
  std::size_t total_ = 0, begin_ = 0, end_ = 0;
  int step_ = 0;
};

}  // namespace whale::exec

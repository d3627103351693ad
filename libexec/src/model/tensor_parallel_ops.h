// File: tensor_parallel_ops.h
// Private: the pieces of a Megatron tensor-parallel block that every block family shares: the
// communication at the borders of its tensor-parallel regions (TensorParallelRegion: all-reduce,
// or all-gather and reduce-scatter under sequence parallelism) and the gradients of a linear
// layer (at once, or deferred to zb-h1's weight pass by the stage's WeightGradients).
#pragma once

#include "model/tensor_parallel_region.h"
#include "model/weight_gradients.h"
#include "whale/exec/backend/backend.h"
#include "whale/exec/backend/tensor.h"

namespace whale::exec {

/// A parameter shard: its value in the compute dtype (the fp32 master itself under fp32) and
/// its fp32 gradient (backend memory).
struct Param {
  ConstTensorView value;
  TensorView grad;
};

class TensorParallelOps {
 public:
  /// `region` (the stage's tensor group) and `weight_gradients` (the stage's, which runs or
  /// defers the linears' weight gradients) must outlive this.
  TensorParallelOps(Backend& backend, TensorParallelRegion& region,
                    WeightGradients& weight_gradients)
      : be_(backend), region_(&region), weight_gradients_(&weight_gradients) {}

  /// The borders of the block's tensor-parallel regions.
  TensorParallelRegion& region() { return *region_; }
  const TensorParallelRegion& region() const { return *region_; }
  /// dinp (rows, in) = dout (rows, out) * w (overwritten, or added to when accumulate_input);
  /// w.grad += dout^T inp and dbias (when not null) += column sums of dout, at once or in the
  /// weight pass as the WeightGradients says.
  void linear_gradients(TensorView dinp, const Param& w, TensorView dbias, ConstTensorView dout,
                        ConstTensorView inp, int rows, int in_channels, int out_channels,
                        bool accumulate_input = false);

 private:
  Backend& be_;
  TensorParallelRegion* region_;
  WeightGradients* weight_gradients_;
};

}  // namespace whale::exec

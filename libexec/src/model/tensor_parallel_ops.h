// File: tensor_parallel_ops.h
// Private: the pieces of a Megatron tensor-parallel block that every block family shares: the
// all-reduce of partial results (the f/g operators) and the gradients of a linear layer.
#pragma once

#include "model/weight_gradients.h"
#include "whale/exec/backend/backend.h"
#include "whale/exec/backend/tensor.h"
#include "whale/exec/comm/communicator.h"

namespace whale::exec {

/// A parameter shard: its value in the compute dtype (the fp32 master itself under fp32) and
/// its fp32 gradient (backend memory).
struct Param {
  ConstTensorView value;
  TensorView grad;
};

class TensorParallelOps {
 public:
  /// tp may be null (no tensor parallelism: the all-reduce does nothing). weight_gradients
  /// (the stage's) runs or defers the linears' weight gradients and must outlive this.
  TensorParallelOps(Backend& backend, Communicator* tp, WeightGradients& weight_gradients)
      : be_(backend), tp_(tp), weight_gradients_(&weight_gradients) {}

  /// The tensor-parallel sum of partial results; none without a group. An activation in a
  /// 16-bit dtype is summed in fp32 and rounded once.
  void all_reduce(TensorView data);
  /// dinp (rows, in) = dout (rows, out) * w (overwritten, or added to when accumulate_input);
  /// w.grad += dout^T inp and dbias (when not null) += column sums of dout, at once or in the
  /// weight pass as the WeightGradients says.
  void linear_gradients(TensorView dinp, const Param& w, TensorView dbias, ConstTensorView dout,
                        ConstTensorView inp, int rows, int in_channels, int out_channels,
                        bool accumulate_input = false);

 private:
  Backend& be_;
  Communicator* tp_;
  WeightGradients* weight_gradients_;
  Tensor reduce_scratch_;  // fp32 copy of a 16-bit activation being all-reduced
};

}  // namespace whale::exec

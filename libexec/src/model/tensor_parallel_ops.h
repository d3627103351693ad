// File: tensor_parallel_ops.h
// Private: the pieces of a Megatron tensor-parallel block that every block family shares: the
// all-reduce of partial results (the f/g operators) and the gradients of a linear layer.
#pragma once

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
  /// tp may be null (no tensor parallelism: the all-reduce does nothing).
  TensorParallelOps(Backend& backend, Communicator* tp) : be_(backend), tp_(tp) {}

  /// The tensor-parallel sum of partial results; none without a group. An activation in a
  /// 16-bit dtype is summed in fp32 and rounded once.
  void all_reduce(TensorView data);
  /// dinp (rows, in) = dout (rows, out) * w (overwritten); w.grad += dout^T inp; dbias (when not
  /// null) += column sums of dout.
  void linear_gradients(TensorView dinp, const Param& w, TensorView dbias, ConstTensorView dout,
                        ConstTensorView inp, int rows, int in_channels, int out_channels);

 private:
  Backend& be_;
  Communicator* tp_;
  Tensor reduce_scratch_;  // fp32 copy of a 16-bit activation being all-reduced
};

}  // namespace whale::exec

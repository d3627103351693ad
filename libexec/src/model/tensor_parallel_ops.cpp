// File: tensor_parallel_ops.cpp
// TensorParallelOps: the linear-layer gradients of a block (its communication is the region's).
#include "model/tensor_parallel_ops.h"

namespace whale::exec {

void TensorParallelOps::linear_gradients(TensorView dinp, const Param& w, TensorView dbias,
                                         ConstTensorView dout, ConstTensorView inp, int rows,
                                         int in_channels, int out_channels,
                                         bool accumulate_input) {
  if (accumulate_input) {
    be_.matmul(false, false, rows, in_channels, out_channels, dout, w.value, dinp, true);
    dinp = TensorView{};  // done: the weight gradients alone remain
  }
  weight_gradients_->linear_backward(dinp, w.value, w.grad, dbias, dout, inp, rows, in_channels,
                                     out_channels);
}

}  // namespace whale::exec

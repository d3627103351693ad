// File: tensor_parallel_ops.cpp
// TensorParallelOps: the tensor-parallel all-reduce and the linear-layer gradients of a block.
#include "model/tensor_parallel_ops.h"

namespace whale::exec {

void TensorParallelOps::all_reduce(TensorView data) {
  if (!tp_) return;
  if (data.dtype == DType::fp32) {
    tp_->all_reduce_sum(data.as<float>(), data.count);
    return;
  }
  reuse_or_allocate(reduce_scratch_, be_, data.count, DType::fp32);
  be_.cast(reduce_scratch_, data, Stream::compute);
  be_.synchronize(Stream::compute);
  tp_->all_reduce_sum(reduce_scratch_.view().as<float>(), data.count);
  be_.cast(data, reduce_scratch_, Stream::compute);
}

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

// File: weight_gradients.cpp
// WeightGradients: a linear's input gradient now; its weight gradient now or in the weight pass.
#include "model/weight_gradients.h"

#include <utility>

namespace whale::exec {
namespace {

/// A copy of `view` in a tensor of its own.
Tensor copy_of(Backend& backend, ConstTensorView view) {
  Tensor out(backend, view.count, view.dtype);
  backend.copy(out, view, Stream::compute);
  return out;
}

}  // namespace

void WeightGradients::linear_backward(TensorView dinp, ConstTensorView weight,
                                      TensorView weight_grad, TensorView bias_grad,
                                      ConstTensorView dout, ConstTensorView inp, int rows,
                                      int in_channels, int out_channels) {
  if (!dinp.empty())
    backend_->matmul(false, false, rows, in_channels, out_channels, dout, weight, dinp, false);
  if (deferring_ < 0) {
    backend_->linear_backward(TensorView{}, weight_grad, bias_grad, dout, inp, weight, rows,
                              in_channels, out_channels);
    return;
  }
  Deferred d;
  d.layer = layer_;
  d.weight = weight;
  d.weight_grad = weight_grad;
  d.bias_grad = bias_grad;
  d.dout = copy_of(*backend_, dout);
  d.inp = copy_of(*backend_, inp);
  d.rows = rows;
  d.in_channels = in_channels;
  d.out_channels = out_channels;
  deferred_[deferring_].push_back(std::move(d));
}

void WeightGradients::run_deferred(int micro_batch, int layer) {
  auto it = deferred_.find(micro_batch);
  if (it == deferred_.end()) return;
  std::vector<Deferred>& queue = it->second;
  std::vector<Deferred> rest;
  for (Deferred& d : queue) {
    if (d.layer != layer) {
      rest.push_back(std::move(d));
      continue;
    }
    backend_->linear_backward(TensorView{}, d.weight_grad, d.bias_grad, d.dout, d.inp, d.weight,
                              d.rows, d.in_channels, d.out_channels);
  }
  if (rest.empty()) {
    deferred_.erase(it);
  } else {
    queue = std::move(rest);
  }
}

}  // namespace whale::exec

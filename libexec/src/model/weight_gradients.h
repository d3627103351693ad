// File: weight_gradients.h
// Private: the backward of a linear layer, with its weight gradient run at once or deferred to
// a split backward's weight pass (zb-h1's W), per micro-batch. Every block type computes its
// linears' gradients here, so every block type can split its backward.
#pragma once

#include <map>
#include <vector>

#include "whale/exec/backend/backend.h"
#include "whale/exec/backend/tensor.h"

namespace whale::exec {

class WeightGradients {
 public:
  /// `backend` holds the tensors and must outlive this.
  explicit WeightGradients(Backend& backend) : backend_(&backend) {}

  /// From now on, linear_backward defers its weight gradients to the weight pass of
  /// `micro_batch` (a split backward's input pass), until run_now.
  void defer_to(int micro_batch) { deferring_ = micro_batch; }
  /// From now on, linear_backward accumulates the weight gradients at once (a whole backward).
  void run_now() { deferring_ = -1; }
  /// The model layer that the linears passed from now on belong to.
  void set_layer(int layer) { layer_ = layer; }

  /// dinp (rows, in) act = dout (rows, out) act * weight (out, in), overwritten (skipped when
  /// dinp is empty); then weight_grad (out, in) fp32 += dout^T inp (rows, in) and bias_grad (out) fp32
  /// += the column sums of dout (skipped when empty): at once, or deferred with copies of dout
  /// and inp (what the weight pass needs; the caller may reuse its buffers).
  void linear_backward(TensorView dinp, ConstTensorView weight, TensorView weight_grad,
                       TensorView bias_grad, ConstTensorView dout, ConstTensorView inp, int rows,
                       int in_channels, int out_channels);

  /// The weight pass of `micro_batch` for the linears of `layer`: accumulates their deferred
  /// weight gradients in the order they were deferred and frees what they kept.
  void run_deferred(int micro_batch, int layer);
  /// Whether `micro_batch` has deferred weight gradients not run yet.
  bool has_deferred(int micro_batch) const { return deferred_.count(micro_batch) != 0; }

 private:
  /// One linear's weight gradient, with its own copies of dout and inp. The weight's values
  /// do not change before the weight pass (the optimizer steps after every backward).
  struct Deferred {
    int layer = 0;
    ConstTensorView weight;
    TensorView weight_grad, bias_grad;
    Tensor dout, inp;
    int rows = 0, in_channels = 0, out_channels = 0;
  };

  Backend* backend_;
  int deferring_ = -1;  // the micro-batch deferred to, -1 when running at once
  int layer_ = 0;
  std::map<int, std::vector<Deferred>> deferred_;  // by micro-batch, in the order deferred
};

}  // namespace whale::exec

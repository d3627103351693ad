// File: loss_memory.cpp
// loss_backward_transient_bytes: the cross entropy's backward buffers; head_norm_gradient_bytes,
// head_norm_backward_bytes and head_backward_transient_bytes: the head's backward beyond what it
// keeps (loss_memory.h).
#include "whale/plan/loss_memory.h"

#include <algorithm>

namespace whale::plan {

// PyTorch's F.cross_entropy is log_softmax followed by nll_loss (torch/nn/functional.py,
// aten/src/ATen/native/LossNLL.cpp: cross_entropy_loss_symint). Autograd runs nll_loss_backward
// first, which returns a dense fp32 tensor of the input's shape (zeros, -1/N at each target),
// then _log_softmax_backward_data, which reads that tensor and the saved output and returns a
// third tensor of the same shape; the saved output is released only when that node finishes.
Bytes loss_backward_transient_bytes(const Layer& layer, CrossEntropyImplementation cross_entropy) {
  if (cross_entropy == CrossEntropyImplementation::fused) return 0;
  return 8.0 * layer.logit_elements;
}

Bytes head_norm_gradient_bytes(const Layer& layer) { return layer.logit_elements > 0 ? layer.input_bytes : 0.0; }

Bytes head_norm_backward_bytes(const Layer& layer, int tp, bool sequence_parallel, bool input_gradient_cached) {
  const Bytes output_gradient = head_norm_gradient_bytes(layer);
  if (output_gradient <= 0 || input_gradient_cached) return output_gradient;
  return output_gradient + layer.input_bytes / (sequence_parallel ? tp : 1);
}

Bytes head_backward_transient_bytes(const Layer& layer, CrossEntropyImplementation cross_entropy, int tp,
                                    bool sequence_parallel, bool input_gradient_cached) {
  return std::max(loss_backward_transient_bytes(layer, cross_entropy) / tp,
                  head_norm_backward_bytes(layer, tp, sequence_parallel, input_gradient_cached));
}

}  // namespace whale::plan

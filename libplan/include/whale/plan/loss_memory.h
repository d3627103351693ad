// File: loss_memory.h
// What the language-model loss holds at the start of the head's backward beyond what the head
// keeps, by the framework's cross-entropy implementation.
#pragma once

#include "whale/plan/framework_memory.h"
#include "whale/plan/model.h"
#include "whale/plan/units.h"

namespace whale::plan {

/// Bytes per sample, at tensor-parallel degree 1 (the logits are vocabulary-parallel, so a tp
/// shard holds 1/tp), that `layer`'s loss allocates in its backward while the layer's kept
/// activations are still alive (l = layer.logit_elements, s v per sample on a family head, 0 on
/// other layers and on listed ones):
///   fused:   0: the gradient of the logits is written into the kept fp32 softmax.
///   pytorch: 8 l: nll_loss's backward allocates the fp32 gradient of the log-probabilities
///            (4 l, zero but at the targets), then log_softmax's backward the fp32 gradient of
///            the logits (4 l), both beside the fp32 log-probabilities that log_softmax kept (the
///            head's 4 l of activation_bytes_split). Under autocast the forward's bf16 logits,
///            their fp32 copy and the log-probabilities (2 + 4 + 4 l) stay below these 12 l.
Bytes loss_backward_transient_bytes(const Layer& layer, CrossEntropyImplementation cross_entropy);

/// The gradient of a family head's final norm output that its LM head's GEMM gives over every
/// row, per sample (layer.input_bytes, under sequence parallelism too: the GEMM's input is
/// gathered); 0 on every other layer (logit_elements 0).
Bytes head_norm_gradient_bytes(const Layer& layer);

/// What a family head's final norm holds in its backward, per sample at tensor-parallel degree
/// `tp`: the gradient of its output (head_norm_gradient_bytes) and, beside it, the gradient of
/// the head's input that it writes over the rows the stage holds (layer.input_bytes, 1/tp under
/// sequence parallelism), unless `input_gradient_cached`: a framework that keeps a stage's block
/// buffers for the run (FrameworkMemory::stage_buffer_cache) writes it into a block's output
/// gradient, which those buffers count. 0 on every other layer.
Bytes head_norm_backward_bytes(const Layer& layer, int tp, bool sequence_parallel, bool input_gradient_cached);

/// What a family head's backward holds beyond what it keeps, per sample at tensor-parallel
/// degree `tp`: the loss's buffers (loss_backward_transient_bytes, vocabulary-parallel: 1/tp)
/// or, after them, head_norm_backward_bytes, whichever is more. 0 on every other layer.
Bytes head_backward_transient_bytes(const Layer& layer, CrossEntropyImplementation cross_entropy, int tp,
                                    bool sequence_parallel, bool input_gradient_cached);

}  // namespace whale::plan

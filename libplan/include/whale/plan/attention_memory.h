// File: attention_memory.h
// What a layer keeps for its backward pass by the framework's choices: its attention core's
// bytes by attention implementation, precision and attention dropout, and its hidden-dropout
// masks where the framework keeps them.
#pragma once

#include "whale/plan/framework_memory.h"
#include "whale/plan/model.h"
#include "whale/plan/precision.h"
#include "whale/plan/units.h"

namespace whale::plan {

/// Bytes per sample, at tensor-parallel degree 1, that `layer`'s attention core keeps for
/// backward when the framework runs `attention` at `precision` (e = bytes per element of the
/// precision, n = layer.attention_score_elements, a s² per sample, r = layer.attention_rows):
///   eager:         softmax output in fp32, 4n; with attention dropout a 1-byte mask, n, and the
///                  dropped-out probabilities, en; without dropout the probabilities cast to the
///                  precision, en, when e < 4 (at fp32 the context GEMM keeps the softmax's own
///                  output). fp32: 9n with dropout, 4n without; fp16/bf16: 7n and 6n.
///   fused_softmax: softmax output en, mask n and dropped-out probabilities en (Korthikanti et
///                  al. 2022's 5as² at e = 2); en without dropout. At fp32 the fused kernel
///                  does not run and eager's bytes apply.
///   flash:         one fp32 log-sum-exp per row, 4r; the mask is regenerated from the seed.
/// A layer without an attention core in these terms (attention_score_elements 0: a listed
/// layer) keeps its activation_bytes_attention, and nothing under flash.
Bytes attention_kept_bytes(const Layer& layer, AttentionImplementation attention, Precision precision);

/// attention_kept_bytes at the framework's implementation; where it draws its dropout masks
/// again (FrameworkMemory::dropout_masks_kept false), the bytes without attention dropout.
Bytes attention_kept_bytes(const Layer& layer, const FrameworkMemory& framework, Precision precision);

/// Bytes per sample at tp 1 that selective recomputation rebuilds in `layer`'s backward, given
/// the bytes its attention core keeps (`attention_kept`, as attention_kept_bytes gives them):
/// those bytes and the core's output (Layer::attention_output_bytes), which the re-run writes
/// again and the backward reads; nothing where the core keeps nothing (nothing is re-run).
Bytes selective_rebuilt_bytes(const Layer& layer, Bytes attention_kept);

/// The replicated activations `layer` keeps per sample at tp 1 under `framework`:
/// activation_bytes_replicated, less dropout_mask_bytes where the masks are drawn again.
Bytes replicated_kept_bytes(const Layer& layer, const FrameworkMemory& framework);

}  // namespace whale::plan

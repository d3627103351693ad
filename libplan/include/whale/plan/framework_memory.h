// File: framework_memory.h
// FrameworkMemory: what a training framework holds on a device beyond the model's tensors (a
// fixed reserve and the allocator's slack), which attention implementation it runs and which
// extra copies of the model state it keeps. Carried by a device profile (YAML: the optional
// `framework_memory` block; docs/profile.md).
#pragma once

#include <string>

#include "whale/plan/units.h"

namespace whale::plan {

/// How the framework computes attention, which sets what the attention core keeps for backward
/// (attention_memory.h):
/// - eager: unfused PyTorch ops (Hugging Face transformers' `eager` attention, Megatron-LM's
///   unfused path): the softmax runs and is kept in fp32, the probabilities are cast to the
///   training precision for the dropout and the context GEMM.
/// - fused_softmax: one kernel for scale, mask and softmax in the training precision
///   (Megatron-LM's FusedScaleMaskSoftmax; fp16 and bf16 only, fp32 falls back to eager).
/// - flash: FlashAttention or PyTorch's scaled_dot_product_attention with a fused backend:
///   no score matrix is kept, only one fp32 log-sum-exp per row.
enum class AttentionImplementation { eager, fused_softmax, flash };
/// How the framework computes the language-model loss over the head's logits, which sets what
/// the head's backward holds beyond what the head keeps (loss_memory.h):
/// - fused: Megatron-LM's vocab-parallel cross entropy, which writes the gradient of the logits
///   into the fp32 softmax it kept, and whale-run's, which does the same.
/// - pytorch: torch.nn.functional.cross_entropy (log_softmax, then nll_loss), as a model written
///   in plain PyTorch or Hugging Face transformers computes its loss: its backward allocates the
///   fp32 gradient of the log-probabilities, then that of the logits, beside the kept fp32
///   log-probabilities.
enum class CrossEntropyImplementation { fused, pytorch };
/// "fused", "pytorch".
const char* to_string(CrossEntropyImplementation cross_entropy);
/// Parses the names above; false on anything else.
bool parse_cross_entropy_implementation(const std::string& text, CrossEntropyImplementation* out);

/// "eager", "fused_softmax", "flash".
const char* to_string(AttentionImplementation attention);
/// Parses the names above (and "sdpa" for flash); false on anything else.
bool parse_attention_implementation(const std::string& text, AttentionImplementation* out);

struct FrameworkMemory {
  /// Fixed bytes per device: the CUDA context, library handles and workspaces, communicator
  /// buffers (YAML: reserve_gib).
  Bytes reserve_bytes = 0;
  /// Extra bytes per byte of the tensors' peak: the caching allocator's fragmentation and
  /// rounding (YAML: allocator_slack_fraction, in [0, 1]).
  double allocator_slack_fraction = 0;
  /// The attention implementation (YAML: attention_implementation; the older `fused_attention:
  /// true` reads as flash and `false` as fused_softmax).
  AttentionImplementation attention = AttentionImplementation::fused_softmax;
  /// The loss's implementation (YAML: cross_entropy_implementation).
  CrossEntropyImplementation cross_entropy = CrossEntropyImplementation::fused;
  /// Whether the gradients are freed after every optimizer step and allocated again by the next
  /// backward (PyTorch's optimizer.zero_grad(set_to_none=True), its default since PyTorch 2.0),
  /// rather than held in persistent buffers (Megatron-LM's contiguous gradient buffer, DDP's
  /// buckets as gradient views, whale-run). A stage then holds its gradients from its first
  /// backward of a step to the optimizer step, and a peak before that backward (one micro-batch
  /// a step: all activations kept, the loss's backward starting) holds none. YAML:
  /// gradients_freed_after_step.
  bool gradients_freed_after_step = false;
  /// Whether the data-parallel gradient buckets are storage of their own beside the gradients
  /// (PyTorch DDP without gradient_as_bucket_view: a second copy of every unsharded gradient
  /// on a replicated stage) rather than the gradients themselves (Megatron-LM's contiguous
  /// gradient buffer, whale-run). YAML: gradient_bucket_copy.
  bool gradient_bucket_copy = false;
  /// Whether the optimizer steps on an fp32 copy of its own (possibly sharded) gradients when
  /// they are accumulated in fp16 or bf16: DeepSpeed ZeRO-1 and -2 convert each partition's
  /// gradients to fp32 for the step, the 4 of the 16 bytes per parameter and GPU that
  /// estimate_zero2_model_states_mem_needs counts beside the fp32 weights and Adam's m and v
  /// (4 * params + 16 * params / gpus). Megatron-LM accumulates in fp32 already
  /// (grad_reduce_precision fp32) and keeps no copy. YAML: fp32_gradient_copy.
  bool fp32_gradient_copy = false;
  /// Whether every pipeline stage on a device keeps the buffers it has used for its next
  /// micro-batches and steps, as whale-run's stage modules do: the activations of as many
  /// micro-batches as the stage ever had in flight, and one block's backward gradient buffers
  /// (Layer::backward_buffer_bytes_*), all held at once, in a scratch its blocks share. The
  /// device's stages then hold the sum of their own peaks, not the program's simultaneous peak.
  /// False: activations are freed after their backward and each intermediate's gradient once
  /// consumed (PyTorch autograd; Korthikanti et al. 2022's activation model, which counts no
  /// such buffer, matches measured peaks). YAML: stage_buffer_cache; default true on a CPU
  /// profile (whale-run's own backend), false on a GPU one.
  bool stage_buffer_cache = false;
  /// Whether each dropout keeps its mask (1 byte per element) and, on the attention
  /// probabilities, the dropped-out copy for the backward (PyTorch's native_dropout, Megatron-LM)
  /// rather than drawing the mask again from the seed there (whale-run, whose masks are a pure
  /// function of the element's place, and FlashAttention's attention dropout). False: a layer
  /// keeps no hidden-dropout masks (Layer::dropout_mask_bytes) and its attention core what it
  /// keeps without dropout (attention_memory.h). YAML: dropout_masks_kept; default false on a
  /// cpu profile (whale-run's own backend), true on a gpu one.
  bool dropout_masks_kept = true;
  /// Whether ZeRO-2 (a stage's shard_gradients) still holds every gradient in one whole buffer,
  /// each bucket reduce-scattered into the replica's piece of it, as whale-run does (every
  /// backward of a step accumulates into the flat buffer before its buckets are reduced; so
  /// does Megatron-LM's distributed optimizer, its gradient buffer whole), rather than holding
  /// the replica's piece only (DeepSpeed ZeRO-2's partitioned gradients, what the planner's
  /// ZeRO-2 saves). The gradients then count whole; the optimizer state stays sharded. YAML:
  /// sharded_gradients_held_whole; default true on a cpu profile (whale-run's own backend),
  /// false on a gpu one.
  bool sharded_gradients_held_whole = false;
  /// Whether a sharded optimizer (ZeRO-1 and -2) still holds the fp32 master weights of every
  /// parameter, sharding only the optimizer's states (Adam's m and v), as whale-run does (it
  /// steps its piece of the flat fp32 values and all-gathers them), rather than only the
  /// replica's piece of them too (DeepSpeed ZeRO, Megatron-LM's distributed optimizer: 12/N_d
  /// bytes per parameter for the master weights, m and v). Nothing without master weights.
  /// YAML: master_weights_held_whole; default true on a cpu profile, false on a gpu one.
  bool master_weights_held_whole = false;
  /// Where the figures come from (YAML: source).
  std::string source;

  bool operator==(const FrameworkMemory& other) const;
};

/// The figures a profile without a `framework_memory` block gets, by its kind: a GPU keeps a
/// 2 GiB reserve, no slack, Megatron-LM's fused softmax and its dropout masks; a CPU (whale-run's
/// own backend, which counts only its tensors) nothing, its stage buffers cached and its masks
/// drawn again.
FrameworkMemory default_framework_memory(const std::string& device_kind);

/// The allocator's slack when the tensors peak at `tensor_bytes`: tensor_bytes *
/// allocator_slack_fraction. A device then holds tensor_bytes + this + reserve_bytes.
Bytes allocator_slack_bytes(const FrameworkMemory& framework, Bytes tensor_bytes);

/// The most tensor bytes that fit in `capacity_bytes` next to the framework's reserve and slack
/// (the inverse of the sum above; negative when the reserve alone does not fit).
Bytes tensor_capacity_bytes(const FrameworkMemory& framework, Bytes capacity_bytes);

}  // namespace whale::plan

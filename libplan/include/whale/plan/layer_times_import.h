// File: layer_times_import.h
// Measured layer times from the outputs of the frameworks people train with: a PyTorch profiler
// Chrome trace and a Megatron-LM training log (docs/layer-times.md). Each reader yields the
// same LayerTimes as whale's own CSV and the per-layer profile JSON (layer_times.h).
#pragma once

#include <string>

#include "whale/plan/layer_times.h"

namespace whale::plan {

/// Reads a PyTorch profiler Chrome trace (`prof.export_chrome_trace(path)`: an object with
/// "traceEvents", or the bare event array) of a run at `micro_batch` samples per device and
/// tensor-parallel degree `tp`. Layers are found by either convention (docs/layer-times.md):
///  - record_function ranges "layer.<i>.forward" (and optionally "layer.<i>.backward"), i
///    indexed as a family model's layers (0 the embedding, the last the head); or, when there
///    are none,
///  - the profiler's module ranges "nn.Module: <Class>_<k>" (with_stack=True) of classes whose
///    name ends in "Block" or "Layer": transformer blocks (the outermost of nested ones).
/// A layer's forward is its forward range; its backward is the sum of the autograd engine's
/// ops (args "Fwd thread id") whose "Sequence number" is that of a forward op inside the range
/// in the same process, else its "layer.<i>.backward" ranges. GPU kernels (cat "kernel"),
/// when the trace has them, time each range: the kernels that the range's runtime calls
/// launched (args "correlation"); otherwise the CPU durations count. Every layer's time is the
/// median over its occurrences (steps, micro-batches), a kind's the median over its layers.
/// Throws whale::Error naming the file and the event or layer on a malformed trace or one
/// without layer ranges.
LayerTimes load_torch_trace_layer_times(const std::string& path, double micro_batch, int tp);

/// Reads a Megatron-LM training log written with --timing-log-level 2 (or 1 for the
/// compute timers of forward_backward_func, docs/layer-times.md): the printed arguments block
/// (micro_batch_size, global_batch_size, tensor/pipeline_model_parallel_size, num_layers,
/// hidden_size, ...) and the timer blocks "(min, max) time across ranks (ms):", "max time
/// across ranks (ms):" or "times across ranks (ms):". The forward-compute and backward-compute
/// times of each pipeline stage, per micro-batch, are spread over the stage's layers by their
/// forward flops (a gpt or llama model built from the arguments); the median over the logged
/// intervals after the first is kept. With pipeline parallelism the per-rank block ("times
/// across ranks", --timing-log-option all) is needed to tell the stages apart. The optimizer
/// timer per parameter updated is kept as `optimizer_s_per_parameter`.
LayerTimes load_megatron_log_layer_times(const std::string& path);

}  // namespace whale::plan

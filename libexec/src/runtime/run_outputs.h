// File: run_outputs.h
// Private outputs of run_training: the per-step log line and metrics record, the measured
// trace gathered to rank 0, and the full-parameter dump.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "whale/exec/runtime/executor.h"
#include "whale/exec/comm/run_transport.h"
#include "whale/plan/plan.h"

namespace whale::exec {

struct StepRecord {
  int64_t step = 0;          // steps completed, from 1
  double loss = 0;
  double step_time_s = 0;
  double tokens_per_s = 0;
  int64_t skipped_steps = -1;  // fp16 loss scaling: steps skipped so far; -1 without it
  double loss_scale = 1;       // fp16 loss scaling: the scale of the next step
  double grad_norm = -1;       // --clip-grad: the step's global gradient norm before clipping; -1 without
  std::string device;          // the writing rank's backend device ("cpu", "cuda:0", ...)
  int64_t peak_memory_bytes = 0;  // the most backend memory that rank has held at once so far
};

/// "step 5/20  loss 5.123456  step_time 0.0123 s  tokens/s 20812", then with loss scaling
/// "  skipped 2  loss_scale 32768", then with clipping "  grad_norm 1.234"
std::string format_log_line(const StepRecord& record, int64_t steps);
/// {"step":5,"loss":5.1234567890123456,"step_time_s":0.0123,"tokens_per_s":20812.3, then
/// ,"skipped_steps":2,"loss_scale":32768 under loss scaling, ,"grad_norm":1.234 under clipping, then
/// ,"device":"cpu","peak_memory_bytes":1048576}
std::string format_metrics_line(const StepRecord& record);

/// Collective: gathers every rank's peak backend memory to rank 0, which gets the log line
/// "whale-run: peak memory per rank, MiB: 23.91 23.91 ..." (rank order); other ranks get "".
std::string gather_peak_memory_line(std::size_t peak_memory_bytes, PeerTransport& transport);

/// Collective: gathers every rank's events to rank 0, which writes the Chrome trace.
void write_measured_trace(const std::string& path, const plan::Plan& plan,
                          const std::vector<plan::TimelineEvent>& mine, PeerTransport& transport);

/// Collective: gathers every rank's layer time samples to rank 0, which writes the CSV of
/// plan::kLayerTimesCsvHeader (atomically): per (device model, layer kind, tp, micro-batch),
/// the median forward and backward seconds over all ranks' samples of the steps after the
/// run's first (all steps when it ran one), rows sorted by that key. A shape with no backward
/// sample (split backward) has no row.
void write_layer_times(const std::string& path, const std::vector<LayerTimeSample>& mine,
                       PeerTransport& transport);

/// Per parameter, in the given order: a line "name count", then count lines of one value
/// each (%.9g, which round-trips a float exactly), row-major.
void write_parameters(const std::string& path, const std::vector<FullParameter>& parameters);

}  // namespace whale::exec

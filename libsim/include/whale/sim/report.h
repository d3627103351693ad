// File: report.h
// Renders an Estimate of a plan for people (text) and for programs (JSON). Deterministic:
// the same plan and estimate give byte-identical text. Shared by whale-sim and whale-plan.
#pragma once

#include <string>

#include "whale/plan/cost_model.h"
#include "whale/plan/plan.h"

namespace whale::sim {

/// A readable summary (step time, throughput, its price where the cluster has prices for the
/// plan's devices, MFU, bubble, breakdown, memory) followed by a
/// per-stage table: layers, devices, dp x tp, shares, recomputation, peak memory / capacity
/// of the stage's fullest device, and out_of_memory_text. Ends with a newline.
std::string format_text_report(const plan::Plan& plan, const plan::Estimate& estimate);

/// Empty when every device fits; otherwise an "OUT OF MEMORY" section: the count of devices
/// whose predicted peak exceeds capacity, the first 8 with their peak, tensors and framework
/// bytes, and per device model the framework reserve, allocator slack and calibrated reserve
/// with their source. Each line ends with a newline.
std::string out_of_memory_text(const plan::Plan& plan, const plan::Estimate& estimate);

/// One JSON object: step_time_s, samples_per_s, tokens_per_s, usd_per_hour and
/// usd_per_million_tokens (null without prices, objective.h), mfu, bubble_fraction, fits,
/// model_flops_per_step, breakdown{...}, stages[...], devices[{id, model, peak_memory_bytes,
/// tensor_memory_bytes, capacity_bytes, busy_s, achieved_tflops}], then `more_members` when
/// given (JSON object members without a leading comma, e.g. "\"compare\": {...}"). Ends with a
/// newline.
std::string format_json_report(const plan::Plan& plan, const plan::Estimate& estimate,
                               const std::string& more_members = "");

/// A number as the reports print it: up to 9 significant digits, "%.9g".
std::string format_number(double value);
/// Bytes as the reports print them: rounded to a whole number, "%.0f".
std::string format_bytes(double bytes);

}  // namespace whale::sim

// File: op_class.h
// Op classes: the kinds of work a person compares between a predicted and a measured timeline,
// named after the events that whale-sim and whale-run both emit ("F s1 mb3", "reduce_bucket s0
// b2", ...). Shared by the comparison table and the comparison picture.
#pragma once

#include <string>
#include <vector>

#include "whale/plan/timeline.h"

namespace whale::sim {

enum class OpClass {
  forward,              // "F sS mbM"
  recompute,            // "R sS mbM": a forward run again before its backward
  backward,             // "B sS mbM" in a timeline without weight passes
  backward_input,       // "B sS mbM" beside "W" passes (zero-bubble schedules)
  backward_weight,      // "W sS mbM"
  tp_collective,        // "tp sS mbM": tensor-parallel all-reduces
  pp_send_recv,         // "send act", "send grad", "recv act", "recv grad" between stages
  dp_grad_reduce,       // "reduce_bucket sS bB": data-parallel gradient reduction per bucket
  dp_weight_allgather,  // "allgather weights sS": ZeRO-2's weight all-gather
  optimizer,            // "optimizer sS"
  other,                // any other name
};

/// Every class, in the order of the tables and the legend.
const std::vector<OpClass>& all_op_classes();
/// The class's name as tables print it, one word: "forward", "backward-input", "tp-collective".
const char* to_string(OpClass op_class);
/// The class's fill colour in the timeline pictures (an SVG colour).
const char* op_class_colour(OpClass op_class);

/// The class of an event name. `split_backward`: the timeline has weight passes ("W"), so its
/// "B" passes compute input gradients only (backward_input rather than backward).
OpClass op_class_of(const std::string& name, bool split_backward);
/// Whether any event is a weight pass ("W sS mbM"): the argument op_class_of wants.
bool has_split_backward(const std::vector<plan::TimelineEvent>& events);

}  // namespace whale::sim

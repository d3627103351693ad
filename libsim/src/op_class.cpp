// File: op_class.cpp
// Op classes of timeline event names, their printed names and picture colours.
#include "whale/sim/op_class.h"

namespace whale::sim {
namespace {

struct ClassInfo {
  OpClass op_class;
  const char* name;
  const char* colour;  // communication keeps the lane colours of the predicted picture
};

/// One row per OpClass, in the enum's order (info() indexes it by the enum value).
const std::vector<ClassInfo>& class_table() {
  static const std::vector<ClassInfo> table = {
      {OpClass::forward, "forward", "#f2b35c"},
      {OpClass::recompute, "recompute", "#c8c8c8"},
      {OpClass::backward, "backward", "#b5651d"},
      {OpClass::backward_input, "backward-input", "#8c4a9e"},
      {OpClass::backward_weight, "backward-weight", "#c994d6"},
      {OpClass::tp_collective, "tp-collective", "#d62728"},
      {OpClass::pp_send_recv, "pp-send-recv", "#1f77b4"},
      {OpClass::dp_grad_reduce, "dp-grad-reduce", "#2ca02c"},
      {OpClass::dp_weight_allgather, "dp-weight-allgather", "#98df8a"},
      {OpClass::optimizer, "optimizer", "#555555"},
      {OpClass::other, "other", "#17becf"},
  };
  return table;
}

const ClassInfo& info(OpClass op_class) { return class_table().at(static_cast<std::size_t>(op_class)); }

bool starts_with(const std::string& text, const char* prefix) {
  return text.rfind(prefix, 0) == 0;
}

}  // namespace

const std::vector<OpClass>& all_op_classes() {
  static const std::vector<OpClass> classes = [] {
    std::vector<OpClass> out;
    for (const ClassInfo& c : class_table()) out.push_back(c.op_class);
    return out;
  }();
  return classes;
}

const char* to_string(OpClass op_class) { return info(op_class).name; }

const char* op_class_colour(OpClass op_class) { return info(op_class).colour; }

OpClass op_class_of(const std::string& name, bool split_backward) {
  if (starts_with(name, "F ")) return OpClass::forward;
  if (starts_with(name, "R ")) return OpClass::recompute;
  if (starts_with(name, "B ")) return split_backward ? OpClass::backward_input : OpClass::backward;
  if (starts_with(name, "W ")) return OpClass::backward_weight;
  if (starts_with(name, "tp ")) return OpClass::tp_collective;
  if (starts_with(name, "send ") || starts_with(name, "recv ")) return OpClass::pp_send_recv;
  if (starts_with(name, "reduce_bucket ")) return OpClass::dp_grad_reduce;
  if (starts_with(name, "allgather weights ")) return OpClass::dp_weight_allgather;
  if (starts_with(name, "optimizer")) return OpClass::optimizer;
  return OpClass::other;
}

bool has_split_backward(const std::vector<plan::TimelineEvent>& events) {
  for (const plan::TimelineEvent& e : events) {
    if (starts_with(e.name, "W ")) return true;
  }
  return false;
}

}  // namespace whale::sim

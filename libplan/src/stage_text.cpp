// File: stage_text.cpp
// stage_device_models, stage_tp_text and shares_text (stage_text.h).
#include "whale/plan/stage_text.h"

#include <algorithm>

namespace whale::plan {
namespace {

// Each run of equal values as value(length), a run of one as the value alone when `lone_plain`.
std::string runs_text(const std::vector<int>& values, bool lone_plain) {
  std::string out;
  for (std::size_t r = 0; r < values.size();) {
    std::size_t end = r;
    while (end < values.size() && values[end] == values[r]) ++end;
    out += (out.empty() ? "" : ",") + std::to_string(values[r]);
    if (!(lone_plain && end - r == 1)) out += "(" + std::to_string(end - r) + ")";
    r = end;
  }
  return out;
}

}  // namespace

std::string stage_device_models(const Plan& plan, const Stage& stage) {
  std::vector<std::string> models;
  for (int id : stage.devices) {
    const std::string& m = plan.cluster.devices.at(id).model;
    if (std::find(models.begin(), models.end(), m) == models.end()) models.push_back(m);
  }
  std::string out;
  for (std::size_t i = 0; i < models.size(); ++i) out += (i ? "+" : "") + models[i];
  return out;
}

std::string stage_tp_text(const Stage& stage) {
  return stage.mixed_tp() ? runs_text(stage.replica_tps, false) : std::to_string(stage.tp);
}

std::string shares_text(const std::vector<int>& shares) {
  if (shares.size() > 1 &&
      std::all_of(shares.begin(), shares.end(), [&](int v) { return v == shares.front(); })) {
    return std::to_string(shares.front()) + " each";
  }
  return runs_text(shares, true);
}

}  // namespace whale::plan

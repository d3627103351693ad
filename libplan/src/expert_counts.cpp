// File: expert_counts.cpp
// Speed-proportional expert counts per ep rank (expert_counts.h).
#include "whale/plan/expert_counts.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "whale/plan/check.h"
#include "whale/plan/error.h"
#include "whale/plan/framework_precision.h"

namespace whale::plan {

std::vector<int> proportional_counts(int experts, const std::vector<double>& weights) {
  const int n = static_cast<int>(weights.size());
  WHALE_CHECK(n > 0 && experts >= n, "proportional_counts: " + std::to_string(experts) + " experts for " + std::to_string(n) + " ranks");
  const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
  std::vector<double> ideal(n);
  std::vector<int> counts(n);
  int sum = 0;
  for (int i = 0; i < n; ++i) {
    ideal[i] = experts * weights[i] / total;
    counts[i] = std::max(1, static_cast<int>(std::floor(ideal[i])));
    sum += counts[i];
  }
  while (sum != experts) {
    int pick = -1;
    double best = -std::numeric_limits<double>::infinity();
    for (int i = 0; i < n; ++i) {
      if (sum > experts && counts[i] <= 1) continue;
      // Below the sum: the largest shortfall gets one more; above it: the largest excess one less.
      const double need = sum < experts ? ideal[i] - counts[i] : counts[i] - ideal[i];
      if (need > best) {
        best = need;
        pick = i;
      }
    }
    counts[pick] += sum < experts ? 1 : -1;
    sum += sum < experts ? 1 : -1;
  }
  return counts;
}

double expert_gemm_flops_per_s(const Plan& plan, int s, int id) {
  const Stage& stage = plan.stages.at(s);
  const DeviceProfile& profile = plan.cluster.profile_of(id);
  const Precision precision = effective_gemm_precision(plan.precision, plan.framework_precision, profile);
  const int share = *std::max_element(stage.shares.begin(), stage.shares.end());
  for (const Layer& layer : plan.model.layers) {
    for (const GemmOp& gemm : layer.gemms) {
      if (!gemm.expert) continue;
      const double etp = stage.expert_tp_degree();
      const double flops = 2.0 * gemm.m * stage.ep * etp / stage.tp * gemm.n / etp * gemm.k * share;
      return profile.peak_flops_per_s.at(precision) * profile.gemm_curve(precision).at(flops);
    }
  }
  return 0;
}

std::vector<int> speed_proportional_expert_counts(const Plan& plan, int s) {
  const Stage& stage = plan.stages.at(s);
  if (!plan.model.moe || stage.ep <= 1) return {};
  const int experts = plan.model.moe->experts;
  if (experts < stage.ep) return {};
  std::vector<double> speed(stage.ep, std::numeric_limits<double>::infinity());
  bool mixed = false;
  for (int d = 0; d < stage.expert_dp(); ++d) {
    for (int t = 0; t < stage.expert_tp_degree(); ++t) {
      const std::vector<int> group = stage.expert_parallel_group(d, t);
      for (int e = 0; e < stage.ep; ++e) {
        mixed = mixed || plan.cluster.devices.at(group[e]).model != plan.cluster.devices.at(group[0]).model;
        speed[e] = std::min(speed[e], expert_gemm_flops_per_s(plan, s, group[e]));
      }
    }
  }
  if (!mixed || speed.front() <= 0) return {};
  const std::vector<int> counts = proportional_counts(experts, speed);
  const bool even = std::all_of(counts.begin(), counts.end(), [&](int c) { return c * stage.ep == experts; });
  return even ? std::vector<int>{} : counts;
}

bool apply_speed_proportional_expert_counts(Plan& plan) {
  bool changed = false;
  for (int s = 0; s < static_cast<int>(plan.stages.size()); ++s) {
    std::vector<int> counts = speed_proportional_expert_counts(plan, s);
    if (counts.empty() || counts == plan.stages[s].expert_counts) continue;
    plan.stages[s].expert_counts = std::move(counts);
    changed = true;
  }
  return changed;
}

bool prefer_uneven_expert_counts(const CostModel& cost, Plan& plan, Estimate& estimate) {
  if (!plan.model.moe) return false;
  Plan uneven = plan;
  if (!apply_speed_proportional_expert_counts(uneven)) return false;
  try {
    BoundedEstimate run =
        cost.bound_and_evaluate(uneven, std::numeric_limits<double>::infinity(), EvaluateOptions{});
    if (!run.estimate) return false;   // it does not fit
    Estimate e = std::move(*run.estimate);
    if (e.step_time_s >= estimate.step_time_s) return false;
    plan = std::move(uneven);
    estimate = std::move(e);
    return true;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace whale::plan

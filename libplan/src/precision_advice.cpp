// File: precision_advice.cpp
// advise_precision: the planner run again in the precision the frameworks train in where a
// usable device lacks the model's (beside the model's own search in whale-plan); and the lines
// whale-plan prints about it.
#include "whale/plan/precision_advice.h"

#include <cmath>
#include <cstdio>
#include <functional>

#include "whale/plan/error.h"
#include "whale/plan/framework_precision.h"
#include "whale/plan/task_pool.h"

namespace whale::plan {
namespace {

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// "fp16 with dynamic loss scaling (Megatron-LM --fp16, DeepSpeed fp16)" for fp16, else the name.
std::string substitute_text(Precision p) {
  if (p == Precision::fp16) return "fp16 with dynamic loss scaling (Megatron-LM --fp16, DeepSpeed \"fp16\")";
  return to_string(p);
}

// ", at 0.42x bf16's USD per 1M tokens" where both best plans are priced, else "".
std::string cost_ratio_text(const PrecisionAdvice& advice, const PlanResult& planned) {
  const RankedPlan& a = advice.substitute_result.best();
  const RankedPlan& b = planned.best();
  const PlanCost ca = plan_cost(a.plan, a.estimate), cb = plan_cost(b.plan, b.estimate);
  if (!ca.priced || !cb.priced || cb.usd_per_million_tokens <= 0) return "";
  char text[96];
  std::snprintf(text, sizeof text, ", at %.3gx %s's USD per 1M tokens", ca.usd_per_million_tokens / cb.usd_per_million_tokens,
                to_string(advice.planned));
  return text;
}

// "; that search was cut (...): its plan is the best it found" where the substitute's search
// stopped short of completing, else "".
std::string cut_text(const PrecisionAdvice& advice) {
  const SearchStats& stats = advice.substitute_result.stats;
  if (!stats.timed_out && !stats.capped) return "";
  const std::string why = stats.timed_out ? "by the time limit"
                                          : "at " + std::to_string(stats.max_evaluations) + " layouts a round";
  return "; that search was cut (" + why + "): its plan is the best it found";
}

// How the substitute's best plan compares in speed, read "the best plan in fp16 is <this>":
// "1.81x as fast", "0.3% slower", "0.0077% faster", "as fast"; a ratio within 1% of 1 is said
// as a percentage ("1x as fast" said nothing). `against`, when not empty, names what it is
// compared with ("in bf16") and is joined with "as" or "than" as the wording needs.
std::string speed_text(double speedup, const std::string& against) {
  const double percent = (speedup - 1.0) * 100.0;
  char text[96];
  if (std::fabs(percent) >= 1.0) {
    std::snprintf(text, sizeof text, "%.3gx as fast%s%s", speedup, against.empty() ? "" : " as ", against.c_str());
  } else if (std::fabs(percent) < 1e-6) {
    std::snprintf(text, sizeof text, "as fast%s%s", against.empty() ? "" : " as ", against.c_str());
  } else {
    std::snprintf(text, sizeof text, "%.2g%% %s%s%s", std::fabs(percent), percent > 0 ? "faster" : "slower",
                  against.empty() ? "" : " than ", against.c_str());
  }
  return text;
}

// The advice's search: the model planned in the precision the frameworks train in where a
// usable device lacks the model's; not yet weighed against the planned result.
PrecisionAdvice search_substitute(const Cluster& cluster, const Model& model, const CostModel& cost,
                                  const PlannerOptions& options) {
  PrecisionAdvice advice;
  advice.planned = model.training.precision;
  const std::vector<int> usable = usable_devices(options.hints, cluster);
  advice.device_models = models_trained_otherwise(advice.planned, cluster, usable);
  if (advice.device_models.empty()) return advice;
  advice.applies = true;
  advice.substitute = framework_training_precision(advice.planned, cluster.profiles.at(advice.device_models.front()));
  Model other = model;
  other.training.precision = advice.substitute;
  PlannerOptions quiet = options;
  quiet.progress = nullptr;
  try {
    advice.substitute_result = search_plans(cluster, other, cost, quiet);
    advice.substitute_found = true;
  } catch (const Error&) {
  }   // no plan in the substitute (its own search would say why)
  return advice;
}

// The substitute's best plan against the planned result's, by `objective`.
void rank_substitute(PrecisionAdvice& advice, const PlanResult& planned, Objective objective) {
  if (!advice.substitute_found) return;
  const RankedPlan& a = advice.substitute_result.best();
  const RankedPlan& b = planned.best();
  advice.speedup = a.estimate.samples_per_s / b.estimate.samples_per_s;
  advice.substitute_better = ranks_before(objective, a.plan, a.estimate, b.plan, b.estimate);
}

}  // namespace

bool parse_precision_request(const std::string& text, PrecisionRequest* out) {
  if (text == "auto") {
    *out = PrecisionRequest{PrecisionRequest::Mode::automatic, Precision::fp32};
    return true;
  }
  Precision p;
  if (text == "tf32" || !parse_precision(text, &p)) return false;   // tf32 is --allow-tf32 under fp32
  *out = PrecisionRequest{PrecisionRequest::Mode::forced, p};
  return true;
}

PrecisionAdvice advise_precision(const Cluster& cluster, const Model& model, const CostModel& cost,
                                 const PlannerOptions& options, const PlanResult& planned) {
  PrecisionAdvice advice = search_substitute(cluster, model, cost, options);
  rank_substitute(advice, planned, options.objective);
  return advice;
}

std::string format_precision_warning(const PrecisionAdvice& advice, const PlanResult& planned) {
  if (!advice.applies || !advice.substitute_found || !advice.substitute_better) return "";
  const char* from = to_string(advice.planned);
  char line[1024];
  std::snprintf(line, sizeof line,
                "warning: %s %s no %s units (%s GEMMs are priced at fp32 there); the frameworks train %s there, and "
                "the best plan in %s is %s (%.4g samples/s against %.4g)%s%s; pass --precision %s or "
                "--precision auto\n",
                join(advice.device_models).c_str(), advice.device_models.size() == 1 ? "has" : "have", from, from,
                substitute_text(advice.substitute).c_str(), to_string(advice.substitute),
                speed_text(advice.speedup, "").c_str(),
                advice.substitute_result.best().estimate.samples_per_s, planned.best().estimate.samples_per_s,
                cost_ratio_text(advice, planned).c_str(), cut_text(advice).c_str(), to_string(advice.substitute));
  return line;
}

std::string format_precision_choice(const PrecisionAdvice& advice, const PlanResult& planned) {
  const char* from = to_string(advice.planned);
  char line[1024];
  if (!advice.applies) {
    std::snprintf(line, sizeof line, "precision auto: %s (every usable device has %s units)\n", from, from);
  } else if (!advice.substitute_found) {
    std::snprintf(line, sizeof line, "precision auto: %s (no plan fits in %s)\n", from, to_string(advice.substitute));
  } else {
    const bool took = advice.substitute_better;
    std::snprintf(line, sizeof line,
                  "precision auto: %s (%s %s no %s units; the best plan in %s is %s%s%s; ranked by %s)\n",
                  to_string(took ? advice.substitute : advice.planned), join(advice.device_models).c_str(),
                  advice.device_models.size() == 1 ? "has" : "have", from, to_string(advice.substitute),
                  speed_text(advice.speedup, std::string("in ") + from).c_str(),
                  cost_ratio_text(advice, planned).c_str(), cut_text(advice).c_str(), to_string(planned.objective));
  }
  return line;
}

PlanResult search_with_precision(const Cluster& cluster, Model& model, const CostModel& cost,
                                 const PlannerOptions& options, const PrecisionRequest& request, std::string* note,
                                 const std::function<void(const PlanResult&)>& then) {
  note->clear();
  if (request.mode == PrecisionRequest::Mode::forced) {
    model.training.precision = request.forced;
    PlanResult result = search_plans(cluster, model, cost, options);
    if (then) then(result);
    return result;
  }
  // The two searches do not depend on each other and each is deterministic: they run side by
  // side (one after the other when a test's fake clock need not be thread-safe). The model's
  // search comes first, so its error is the one rethrown. Under Mode::model its result is the
  // one returned, so `then` runs beside the substitute's search too.
  const bool model_mode = request.mode == PrecisionRequest::Mode::model;
  PlanResult result;
  PrecisionAdvice advice;
  run_tasks({[&] {
               result = search_plans(cluster, model, cost, options);
               if (model_mode && then) then(result);
             },
             [&] { advice = search_substitute(cluster, model, cost, options); }},
            side_by_side_threads(options));
  rank_substitute(advice, result, options.objective);
  if (model_mode) {
    *note = format_precision_warning(advice, result);
    return result;
  }
  *note = format_precision_choice(advice, result);
  if (advice.substitute_better) {
    model.training.precision = advice.substitute;
    result = std::move(advice.substitute_result);
  }
  if (then) then(result);
  return result;
}

}  // namespace whale::plan

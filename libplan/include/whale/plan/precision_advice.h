// File: precision_advice.h
// Precision advice: where a usable device lacks the model's training precision (bf16 on a
// V100 or T4, priced at fp32), the planner also plans in the precision the frameworks train in
// there (fp16 with dynamic loss scaling) and says how much faster that is; whale-plan's
// --precision auto takes the better of the two, --precision bf16|fp16|fp32 forces one.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "whale/plan/planner.h"

namespace whale::plan {

/// How whale-plan picks the training precision (--precision).
struct PrecisionRequest {
  enum class Mode { model, automatic, forced };
  Mode mode = Mode::model;              // model: the model's training.precision, with advice
  Precision forced = Precision::fp32;   // the precision of Mode::forced
};

/// Parses "auto", "bf16", "fp16" or "fp32"; returns false on anything else.
bool parse_precision_request(const std::string& text, PrecisionRequest* out);

/// The model's precision and the one the frameworks would train in instead, both planned.
struct PrecisionAdvice {
  bool applies = false;               // a usable device trains `planned` as `substitute`
  Precision planned = Precision::fp32;
  Precision substitute = Precision::fp32;
  std::vector<std::string> device_models;   // the usable device models that make the difference
  bool substitute_found = false;      // the planner found a plan in `substitute`
  PlanResult substitute_result;       // that search (same cluster, options, objective)
  double speedup = 0;                 // substitute's best samples/s / planned's best samples/s
  bool substitute_better = false;     // substitute's best ranks before planned's (options' objective)
};

/// The advice for `planned` (the result of search_plans for `model` with `options`): where a
/// usable device (options.hints' exclusions aside) trains model.training.precision as another
/// precision (framework_training_precision), the same search in that precision. A search that
/// finds no plan leaves substitute_found false.
PrecisionAdvice advise_precision(const Cluster& cluster, const Model& model, const CostModel& cost,
                                 const PlannerOptions& options, const PlanResult& planned);

/// whale-plan's warning when the substitute's best plan is better (else ""), e.g.
/// "warning: bf16 is priced at fp32 on v100-sxm2-16gb (no bf16 units); ... fp16 ... is 4.12x
/// faster ...; pass --precision fp16 or --precision auto". Ends with a newline.
std::string format_precision_warning(const PrecisionAdvice& advice, const PlanResult& planned);

/// The note of --precision auto: which precision it took and why. Ends with a newline.
std::string format_precision_choice(const PrecisionAdvice& advice, const PlanResult& planned);

/// whale-plan's search under `request`: a forced precision replaces model's training precision
/// and is planned alone; otherwise the model's precision is planned and advised on
/// (advise_precision), and under Mode::automatic the better of the two results is returned with
/// `model`'s precision set to it. `*note` receives format_precision_choice (automatic) or
/// format_precision_warning (model; "" when there is nothing to say). Throws as search_plans.
/// The substitute's search runs beside the model's (PlannerOptions::clock_s set with one
/// thread: after it). `then`, when set, is called once with the result to be returned, on the
/// model's search's thread as soon as that result is known: under Mode::model beside the
/// substitute's search (so that work after the search, such as the batch advice, overlaps it),
/// otherwise before returning. `model` does not change while it runs (under Mode::automatic
/// it already has the chosen precision). An exception from it is rethrown here.
PlanResult search_with_precision(const Cluster& cluster, Model& model, const CostModel& cost,
                                 const PlannerOptions& options, const PrecisionRequest& request, std::string* note,
                                 const std::function<void(const PlanResult&)>& then = {});

}  // namespace whale::plan

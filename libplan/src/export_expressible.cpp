// File: export_expressible.cpp
// expressible_variant (export.h): a plan as Megatron-LM or DeepSpeed can run it.
#include "whale/plan/export.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "export_layout.h"

namespace whale::plan {
namespace {

// The transformer layers of `plan`'s model, by index.
std::vector<int> transformer_layers(const Plan& plan) {
  std::vector<int> body;
  for (int i = 0; i < static_cast<int>(plan.model.layers.size()); ++i) {
    if (plan.model.layers[i].kind == LayerKind::transformer) body.push_back(i);
  }
  return body;
}

// Megatron-LM's split of `blocks` transformer layers over p > 2 stages: every middle stage m =
// floor or ceil of blocks / p (the one with the smaller largest stage), the first and the last
// the rest, halved; empty where neither leaves the first and the last a layer each.
std::vector<int> megatron_block_counts(int blocks, int p) {
  std::vector<int> best;
  for (const int m : {blocks / p, (blocks + p - 1) / p}) {
    const int rest = blocks - (p - 2) * m;
    if (m < 1 || rest < 2) continue;
    std::vector<int> counts(p, m);
    counts.front() = rest / 2;
    counts.back() = rest - rest / 2;
    if (best.empty() || *std::max_element(counts.begin(), counts.end()) < *std::max_element(best.begin(), best.end()))
      best = counts;
  }
  return best;
}

// The stages' boundaries moved so that stage s holds counts[s] transformer layers, the outer
// layers staying with the first and the last stage.
void place_blocks(Plan* plan, const std::vector<int>& counts) {
  const std::vector<int> body = transformer_layers(*plan);
  const int stages = static_cast<int>(plan->stages.size());
  int taken = 0;
  for (int s = 0; s < stages; ++s) {
    plan->stages[s].first_layer = s == 0 ? 0 : body[taken];
    taken += counts[s];
    plan->stages[s].end_layer = s + 1 == stages ? static_cast<int>(plan->model.layers.size()) : body[taken];
  }
}

// The layer split the framework places, where the plan's is not one: false when none of its
// splits suits the stages. `*changed` names the new split.
bool framework_layer_split(Plan* plan, Framework framework, std::string* changed) {
  const std::vector<int> blocks = export_layout(*plan).blocks;
  const int stages = static_cast<int>(blocks.size());
  const int total = static_cast<int>(transformer_layers(*plan).size());
  const bool every_stage_even = framework == Framework::deepspeed || plan->schedule.chunks > 1;
  if (stages == 1 || (every_stage_even ? all_equal(blocks) : stages < 3 || middle_stages_even(blocks))) return true;
  std::vector<int> counts;
  if (every_stage_even) {
    if (total % stages != 0) return false;
    counts.assign(stages, total / stages);
    *changed = "layers " + std::to_string(total / stages) + " a stage";
  } else {
    counts = megatron_block_counts(total, stages);
    if (counts.empty()) return false;
    *changed = "layers first " + std::to_string(counts.front()) + ", middle " + std::to_string(counts[1]) + ", last " +
               std::to_string(counts.back());
  }
  place_blocks(plan, counts);
  return true;
}

// The schedule the framework runs the pipeline by: false for one it cannot take.
bool framework_schedule(Plan* plan, Framework framework, std::string* changed) {
  const ScheduleKind kind = plan->schedule.kind;
  if (plan->pipeline_groups() == 1 || kind == ScheduleKind::one_f_one_b) return true;
  if (kind == ScheduleKind::interleaved_1f1b && framework == Framework::megatron) {
    return plan->micro_batches % plan->pipeline_groups() == 0;
  }
  if (plan->schedule.chunks != 1) return false;   // a wave, or interleaving under DeepSpeed
  plan->schedule.kind = ScheduleKind::one_f_one_b;
  *changed = "1f1b";
  return true;
}

// Every data-parallel rank the same share of a micro-batch: false where it cannot be.
bool even_shares(Plan* plan, std::string* changed) {
  for (Stage& stage : plan->stages) {
    if (all_equal(stage.shares)) continue;
    if (plan->micro_batch_size % stage.dp() != 0) return false;
    stage.shares.assign(stage.dp(), plan->micro_batch_size / stage.dp());
    *changed = "even shares";
  }
  return true;
}

// Megatron-Core's one expert layout: the least sharded (ep x expert_tp) of the stages' in every
// stage, the experts split evenly; its expert groups stay inside the nodes where the others'
// did, and every stage has the same dp x tp, so it is valid for all.
void one_expert_layout(Plan* plan, std::string* changed) {
  if (!plan->model.moe) return;
  const Stage* least = &plan->stages.front();
  bool differ = false;
  for (const Stage& stage : plan->stages) {
    differ = differ || stage.ep != least->ep || stage.expert_tp_degree() != least->expert_tp_degree() ||
             !stage.expert_counts.empty();
    if (stage.ep * stage.expert_tp_degree() < least->ep * least->expert_tp_degree()) least = &stage;
  }
  if (!differ) return;
  const int ep = least->ep, expert_tp = least->expert_tp_degree();
  for (Stage& stage : plan->stages) {
    stage.ep = ep;
    stage.expert_tp = expert_tp;
    stage.expert_counts.clear();
  }
  *changed = "ep " + std::to_string(ep) + " x expert_tp " + std::to_string(expert_tp) + " in every stage";
}

// Optimizer and gradient sharding and sequence parallelism: on in every stage where one stage
// has them (sequence parallelism off under DeepSpeed, and at tp 1).
void one_stage_setting(Plan* plan, Framework framework, std::vector<std::string>* changes) {
  bool optimizer = false, gradients = false, sequence = false;
  for (const Stage& stage : plan->stages) {
    optimizer = optimizer || stage.shard_optimizer;
    gradients = gradients || stage.shard_gradients;
    sequence = sequence || stage.sequence_parallel;
  }
  sequence = sequence && framework == Framework::megatron && plan->stages.front().tp > 1;
  bool o = false, g = false, s = false;
  for (Stage& stage : plan->stages) {
    o = o || stage.shard_optimizer != optimizer;
    g = g || stage.shard_gradients != gradients;
    s = s || stage.sequence_parallel != sequence;
    stage.shard_optimizer = optimizer;
    stage.shard_gradients = gradients;
    stage.sequence_parallel = sequence;
  }
  if (o) changes->push_back(optimizer ? "optimizer sharded in every stage" : "optimizer replicated");
  if (g) changes->push_back(gradients ? "gradients sharded in every stage" : "gradients replicated");
  if (s) changes->push_back(sequence ? "sequence parallelism in every stage" : "no sequence parallelism");
}

// The (dp, tp) degrees the stages have that every stage can take, in stage order: none where
// the framework cannot run the model or a stage runs replicas at mixed tp, or the stages'
// device counts differ; several only for a dense model (an expert layout is tied to the
// stage's degrees), each tp running its groups inside nodes and splitting the layers.
std::vector<std::pair<int, int>> degree_options(const Plan& plan, Framework framework) {
  std::vector<std::pair<int, int>> out;
  if (plan.model.family == "listed" || (framework == Framework::deepspeed && plan.model.moe)) return out;
  const Stage& first = plan.stages.front();
  for (const Stage& stage : plan.stages) {
    if (stage.mixed_tp() || stage.devices.size() != first.devices.size()) return {};
  }
  for (const Stage& stage : plan.stages) {
    const std::pair<int, int> degrees{stage.dp(), stage.tp};
    if (std::find(out.begin(), out.end(), degrees) != out.end()) continue;
    const bool every_stage = std::all_of(plan.stages.begin(), plan.stages.end(), [&](const Stage& other) {
      return other.tp == stage.tp || plan.cluster.runs_inside_nodes(other.devices, stage.tp);
    });
    if (every_stage && tp_splits_layers(plan.model, stage.tp)) out.push_back(degrees);
  }
  if (plan.model.moe && out.size() > 1) return {};
  return out;
}

// Every stage at `degrees` (dp, tp) on its own devices, its ranks sharing a micro-batch
// evenly: false where they cannot.
bool set_degrees(Plan* plan, std::pair<int, int> degrees, std::string* changed) {
  for (Stage& stage : plan->stages) {
    if (stage.tp == degrees.second) continue;
    if (plan->micro_batch_size % degrees.first != 0) return false;
    stage.tp = degrees.second;
    stage.shares.assign(degrees.first, plan->micro_batch_size / degrees.first);
    *changed = "dp " + std::to_string(degrees.first) + " x tp " + std::to_string(degrees.second) + " in every stage";
  }
  return true;
}

std::string joined(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) {
    if (!p.empty()) out += (out.empty() ? "" : ", ") + p;
  }
  return out;
}

// `plan` made expressible but for its recomputation, at `degrees`; false where it cannot be.
bool expressible_but_recomputation(Plan* plan, Framework framework, std::pair<int, int> degrees,
                                   std::vector<std::string>* changes) {
  changes->assign(5, "");
  if (!set_degrees(plan, degrees, &(*changes)[0]) || !framework_schedule(plan, framework, &(*changes)[1]) ||
      !even_shares(plan, &(*changes)[2]) || !framework_layer_split(plan, framework, &(*changes)[3])) {
    return false;
  }
  if (framework == Framework::megatron) one_expert_layout(plan, &(*changes)[4]);
  one_stage_setting(plan, framework, changes);
  return true;
}

}  // namespace

std::optional<RankedPlan> expressible_variant(const RankedPlan& ranked, const CostModel& cost, Framework framework) {
  if (ranked.plan.stages.empty()) return std::nullopt;
  const std::vector<std::pair<int, int>> options = degree_options(ranked.plan, framework);
  if (options.empty()) return std::nullopt;
  if (export_limits(ranked.plan, framework).empty()) return ranked;
  // One recomputation setting: each the stages have, the fastest that fits.
  std::set<Recompute> settings;
  for (const Stage& stage : ranked.plan.stages) {
    settings.insert(framework == Framework::deepspeed && stage.recompute == Recompute::selective ? Recompute::full
                                                                                                  : stage.recompute);
  }
  std::optional<RankedPlan> best;
  for (const std::pair<int, int>& degrees : options) {
    Plan plan = ranked.plan;
    std::vector<std::string> changes;
    if (!expressible_but_recomputation(&plan, framework, degrees, &changes)) continue;
    for (const Recompute setting : settings) {
      RankedPlan variant{plan, {}, ranked.analytic_s, ranked.label};
      bool changed = false;
      for (Stage& stage : variant.plan.stages) {
        changed = changed || stage.recompute != setting;
        stage.recompute = setting;
      }
      if (!export_limits(variant.plan, framework).empty()) continue;
      variant.estimate = cost.evaluate(variant.plan, EvaluateOptions{});
      if (!variant.estimate.fits || (best && best->estimate.step_time_s <= variant.estimate.step_time_s)) continue;
      std::vector<std::string> named = changes;
      if (changed) named.push_back(std::string("recompute ") + to_string(setting) + " in every stage");
      variant.label += " as " + std::string(to_string(framework)) + " runs it (" + joined(named) + ")";
      best = std::move(variant);
    }
  }
  return best;
}

}  // namespace whale::plan

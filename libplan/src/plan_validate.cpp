// File: plan_validate.cpp
// validate_plan: every rule a plan must meet before it can be simulated or run. Each failure is
// a whale::Error naming the plan file and the YAML path of the offending field.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "whale/plan/error.h"
#include "whale/plan/limits.h"
#include "whale/plan/plan.h"

namespace whale::plan {
namespace {

std::string stage_path(int s, const std::string& field) {
  return "stages[" + std::to_string(s) + "]." + field;
}

std::string layer_range(int first, int end) {
  return "[" + std::to_string(first) + ", " + std::to_string(end - 1) + "]";
}

void check_schedule(const Plan& plan, const std::string& file) {
  if (plan.micro_batch_size <= 0) throw Error(file, "micro_batch_size", "expected a positive micro_batch_size");
  if (plan.micro_batches <= 0) throw Error(file, "micro_batches", "expected a positive number of micro_batches");
  if (plan.stages.empty()) throw Error(file, "stages", "expected at least one stage");
  if (!(plan.gradient_bucket_mib > 0 && plan.gradient_bucket_mib <= kMaxGradientBucketMib)) {
    char got[32];
    std::snprintf(got, sizeof got, "%g", plan.gradient_bucket_mib);
    throw Error(file, "gradient_bucket_mib",
                "a gradient bucket size in MiB above 0 and at most " +
                    std::to_string(static_cast<int64_t>(kMaxGradientBucketMib)) + ", got " + got,
                "leave it out for PyTorch DDP's 25 MiB");
  }
  if (plan.moe_dispatcher != MoeDispatcher::alltoall && !plan.model.moe) {
    throw Error(file, "moe_dispatcher", std::string("moe_dispatcher ") + to_string(plan.moe_dispatcher) + " needs a mixture-of-experts model (a moe: block)",
                "leave it out for a dense model");
  }
  const int chunks = plan.schedule.chunks;
  if (chunks <= 0) throw Error(file, "schedule.chunks", "expected a positive chunks");
  const bool multi_chunk = plan.schedule.kind == ScheduleKind::interleaved_1f1b || plan.schedule.kind == ScheduleKind::wave;
  if (!multi_chunk && chunks != 1) {
    throw Error(file, "schedule.chunks", std::string("schedule ") + to_string(plan.schedule.kind) + " runs one chunk per device group, got chunks " + std::to_string(chunks),
                "use interleaved-1f1b or wave for several chunks");
  }
  if (plan.stages.size() % chunks != 0) {
    throw Error(file, "stages", std::to_string(plan.stages.size()) + " stages are not a multiple of schedule.chunks " + std::to_string(chunks),
                "a schedule with v chunks over p device groups has p*v stages");
  }
}

// Layer ranges tile [0, layers) in order, without overlap or gap.
void check_layers(const Plan& plan, const std::string& file) {
  const int total = static_cast<int>(plan.model.layers.size());
  int next = 0;
  for (int s = 0; s < static_cast<int>(plan.stages.size()); ++s) {
    const Stage& stage = plan.stages[s];
    const std::string range = layer_range(stage.first_layer, stage.end_layer);
    if (stage.end_layer <= stage.first_layer) throw Error(file, stage_path(s, "layers"), "empty layer range " + range);
    if (stage.first_layer < next) {
      throw Error(file, stage_path(s, "layers"), "layers " + range + " overlap the previous stage, which ends at layer " + std::to_string(next - 1),
                  "start this stage at layer " + std::to_string(next));
    }
    if (stage.first_layer > next) {
      throw Error(file, stage_path(s, "layers"), "layers " + std::to_string(next) + ".." + std::to_string(stage.first_layer - 1) + " are in no stage (a gap before " + range + ")",
                  "start this stage at layer " + std::to_string(next));
    }
    if (stage.end_layer > total) {
      throw Error(file, stage_path(s, "layers"), "layers " + range + " go past the model's last layer " + std::to_string(total - 1),
                  "model '" + plan.model.name + "' has " + std::to_string(total) + " layers (embedding, blocks, head)");
    }
    next = stage.end_layer;
  }
  if (next != total) {
    throw Error(file, stage_path(static_cast<int>(plan.stages.size()) - 1, "layers"),
                "layers " + std::to_string(next) + ".." + std::to_string(total - 1) + " are in no stage (a gap at the end)",
                "the last stage must end at layer " + std::to_string(total - 1));
  }
}

// Stage::expert_counts: one positive count per ep rank, summing to the model's experts.
void check_expert_counts(const Stage& stage, int experts, const std::string& path, const std::string& file) {
  const std::string hint = "one count per ep rank, each at least 1, summing to the " + std::to_string(experts) + " experts, or leave it out for experts / ep each";
  if (static_cast<int>(stage.expert_counts.size()) != stage.ep) {
    throw Error(file, path, "expected " + std::to_string(stage.ep) + " counts (ep " + std::to_string(stage.ep) + "), got " + std::to_string(stage.expert_counts.size()), hint);
  }
  int sum = 0;
  for (int count : stage.expert_counts) {
    if (count < 1) throw Error(file, path, "expected positive counts, got " + std::to_string(count), hint);
    if (count > experts) throw Error(file, path, "count " + std::to_string(count) + " is above the model's " + std::to_string(experts) + " experts", hint);
    sum += count;
  }
  if (sum != experts) {
    throw Error(file, path, "the counts sum to " + std::to_string(sum) + ", not to the model's " + std::to_string(experts) + " experts", hint);
  }
}

// The expert layout (Stage::ep, expert_tp, expert_counts): only on a mixture-of-experts model,
// ep dividing its experts (or expert_counts splitting them) and ep x expert_tp dividing the
// stage's devices.
void check_expert_layout(const Plan& plan, int s, const std::string& file) {
  const Stage& stage = plan.stages[s];
  const int size = static_cast<int>(stage.devices.size());
  if (stage.ep < 1) throw Error(file, stage_path(s, "ep"), "expected a positive ep, got " + std::to_string(stage.ep), "1: every device holds every expert");
  if (stage.expert_tp < 0) throw Error(file, stage_path(s, "expert_tp"), "expected a positive expert_tp, got " + std::to_string(stage.expert_tp));
  if (!plan.model.moe) {
    if (stage.ep != 1) {
      throw Error(file, stage_path(s, "ep"), "ep " + std::to_string(stage.ep) + " needs a mixture-of-experts model, and model '" + plan.model.name + "' has no moe",
                  "leave ep out, or give the model a moe block (docs/moe.md)");
    }
    if (stage.expert_tp > 0) {
      throw Error(file, stage_path(s, "expert_tp"), "expert_tp needs a mixture-of-experts model, and model '" + plan.model.name + "' has no moe",
                  "leave expert_tp out");
    }
    if (!stage.expert_counts.empty()) {
      throw Error(file, stage_path(s, "expert_counts"), "expert_counts needs a mixture-of-experts model, and model '" + plan.model.name + "' has no moe",
                  "leave expert_counts out");
    }
    return;
  }
  const int experts = plan.model.moe->experts;
  if (!stage.expert_counts.empty()) {
    check_expert_counts(stage, experts, stage_path(s, "expert_counts"), file);
  } else if (experts % stage.ep != 0) {
    throw Error(file, stage_path(s, "ep"), "ep " + std::to_string(stage.ep) + " does not divide the model's " + std::to_string(experts) + " experts",
                "each ep rank holds experts / ep experts, unless expert_counts gives each rank's count");
  }
  const int expert_group = stage.ep * stage.expert_tp_degree();
  if (expert_group > size || size % expert_group != 0) {
    throw Error(file, stage_path(s, stage.expert_tp > 0 ? "expert_tp" : "ep"),
                "ep " + std::to_string(stage.ep) + " x expert_tp " + std::to_string(stage.expert_tp_degree()) + " = " + std::to_string(expert_group) +
                    " does not divide the stage's " + std::to_string(size) + " devices",
                "the experts run on the stage's devices as ep x expert_tp x expert_dp");
  }
}

// A tp degree `tp` (at YAML path `field`) splits the model's layers (tp_splits_layers) and
// gives every tensor rank rows of the vocabulary-parallel token table and LM head.
void check_tp_divides_heads(const Plan& plan, int tp, const std::string& field, const std::string& file) {
  if (tp_splits_layers(plan.model, tp)) return;
  throw Error(file, field, tp_split_failure(plan.model, tp),
              "use a tp that divides the heads, the kv_heads and the ffn_hidden width and is at most the "
              "vocabulary (the token table and the LM head are split by vocabulary rows)");
}

// Mixed tensor parallelism (Stage::replica_tps): the degrees cover the stage's devices, each
// divides the heads and the largest degree (so that the shards nest), and the strategies that
// assume one tp for every replica are off.
void check_replica_tps(const Plan& plan, int s, const std::string& file) {
  const Stage& stage = plan.stages[s];
  const std::string field = stage_path(s, "replica_tp");
  int sum = 0, largest = 0;
  for (int degree : stage.replica_tps) {
    if (degree <= 0) throw Error(file, field, "expected positive tp degrees, got " + std::to_string(degree));
    sum += degree;
    largest = std::max(largest, degree);
  }
  if (sum != static_cast<int>(stage.devices.size())) {
    throw Error(file, field, "replica_tp sums to " + std::to_string(sum) + ", not the stage's " + std::to_string(stage.devices.size()) + " devices",
                "give one tp per replica; replica r holds the next replica_tp[r] devices");
  }
  for (std::size_t r = 0; r < stage.replica_tps.size(); ++r) {
    const int degree = stage.replica_tps[r];
    const std::string entry = field + "[" + std::to_string(r) + "]";
    check_tp_divides_heads(plan, degree, entry, file);
    if (largest % degree != 0) {
      throw Error(file, entry, "tp " + std::to_string(degree) + " does not divide the largest replica tp " + std::to_string(largest),
                  "the replicas' shards must nest: use powers of two");
    }
  }
  const auto uniform_only = [&](bool set, const std::string& name, const std::string& what) {
    if (!set) return;
    throw Error(file, stage_path(s, name), what + " needs one tp for every replica, and this stage has replica_tp",
                "drop " + name + ", or give the stage a single tp");
  };
  uniform_only(stage.sequence_parallel, "sequence_parallel", "sequence parallelism");
  uniform_only(stage.shard_optimizer, "shard_optimizer", "a sharded optimizer (ZeRO)");
  uniform_only(stage.shard_gradients, "shard_gradients", "sharded gradients (ZeRO-2)");
  if (plan.model.moe) {
    throw Error(file, field, "replica_tp needs a dense model, and model '" + plan.model.name + "' has mixture-of-experts blocks",
                "give the stage a single tp (expert layouts assume one tp per stage)");
  }
}

void check_degrees(const Plan& plan, int s, const std::string& file) {
  const Stage& stage = plan.stages[s];
  const int size = static_cast<int>(stage.devices.size());
  if (stage.tp <= 0) throw Error(file, stage_path(s, "tp"), "expected a positive tp, got " + std::to_string(stage.tp));
  if (size == 0) throw Error(file, stage_path(s, "devices"), "expected at least one device");
  if (stage.mixed_tp()) {
    check_replica_tps(plan, s, file);
  } else {
    if (size % stage.tp != 0) {
      throw Error(file, stage_path(s, "tp"), "tp " + std::to_string(stage.tp) + " does not divide the group size " + std::to_string(size),
                  "a group is dp x tp devices");
    }
    check_tp_divides_heads(plan, stage.tp, stage_path(s, "tp"), file);
  }
  if (stage.sequence_parallel && stage.tp < 2) {
    throw Error(file, stage_path(s, "sequence_parallel"), "sequence_parallel needs tp > 1, got tp " + std::to_string(stage.tp),
                "set tp to 2 or more, or drop sequence_parallel");
  }
  if (stage.sequence_parallel && plan.model.sequence > 0 && plan.model.sequence % stage.tp != 0) {
    throw Error(file, stage_path(s, "sequence_parallel"),
                "tp " + std::to_string(stage.tp) + " does not divide the model's sequence " + std::to_string(plan.model.sequence),
                "sequence parallelism gives each tp device sequence / tp tokens");
  }
  if (stage.shard_gradients && !stage.shard_optimizer) {
    throw Error(file, stage_path(s, "shard_gradients"), "shard_gradients needs shard_optimizer: true",
                "ZeRO-2 shards the gradients on top of the optimizer state: set both");
  }
  check_expert_layout(plan, s, file);
  if (static_cast<int>(stage.shares.size()) != stage.dp()) {
    throw Error(file, stage_path(s, "shares"), "expected " + std::to_string(stage.dp()) + " shares (one per replica), got " + std::to_string(stage.shares.size()));
  }
  int sum = 0;
  for (int share : stage.shares) {
    if (share <= 0) throw Error(file, stage_path(s, "shares"), "expected positive shares, got " + std::to_string(share));
    sum += share;
  }
  if (sum != plan.micro_batch_size) {
    throw Error(file, stage_path(s, "shares"), "shares sum to " + std::to_string(sum) + ", not micro_batch_size " + std::to_string(plan.micro_batch_size),
                "the replicas of a stage split each micro-batch between them");
  }
}

// Stages that share a device group (interleaved, wave) run on one layout: the same tp degree
// and the same shares, so that each device holds one replica of every chunk it runs.
void check_same_layout(const Stage& first, int first_index, const Stage& stage, int s, const std::string& file) {
  if (stage.replica_tps != first.replica_tps) {
    throw Error(file, stage_path(s, stage.mixed_tp() ? "replica_tp" : "tp"),
                "the replicas' tp degrees differ from those of stage " + std::to_string(first_index) + ", which runs on the same device group",
                "stages that share a device group need the same tp and shares");
  }
  if (stage.tp != first.tp) {
    throw Error(file, stage_path(s, "tp"),
                "tp " + std::to_string(stage.tp) + " differs from tp " + std::to_string(first.tp) + " of stage " + std::to_string(first_index) +
                    ", which runs on the same device group",
                "stages that share a device group need the same tp and shares");
  }
  if (stage.shares != first.shares) {
    throw Error(file, stage_path(s, "shares"),
                "shares differ from those of stage " + std::to_string(first_index) + ", which runs on the same device group",
                "stages that share a device group need the same tp and shares");
  }
  if (stage.ep != first.ep || stage.expert_tp_degree() != first.expert_tp_degree() ||
      stage.expert_counts != first.expert_counts) {
    throw Error(file, stage_path(s, "ep"),
                "the expert layout (ep " + std::to_string(stage.ep) + ", expert_tp " + std::to_string(stage.expert_tp_degree()) + ", expert_counts) differs from that of stage " +
                    std::to_string(first_index) + ", which runs on the same device group",
                "stages that share a device group need the same ep, expert_tp and expert_counts");
  }
}

// Devices exist, each group has one device list, and no device serves two groups.
void check_placement(const Plan& plan, const std::string& file) {
  const int count = static_cast<int>(plan.cluster.devices.size());
  std::map<int, int> first_stage_of_group;
  std::map<int, int> group_of_device;
  std::map<int, int> stage_of_device;
  for (int s = 0; s < static_cast<int>(plan.stages.size()); ++s) {
    const Stage& stage = plan.stages[s];
    const int group = plan.group_of_stage(s);
    std::set<int> seen;
    for (int id : stage.devices) {
      if (id < 0 || id >= count) {
        throw Error(file, stage_path(s, "devices"), "device " + std::to_string(id) + " is not in cluster '" + plan.cluster.name + "'",
                    "it has " + std::to_string(count) + " devices, ids 0-" + std::to_string(count - 1));
      }
      if (!seen.insert(id).second) throw Error(file, stage_path(s, "devices"), "device " + std::to_string(id) + " is used twice in this stage");
    }
    auto first = first_stage_of_group.find(group);
    if (first != first_stage_of_group.end()) {
      if (plan.stages[first->second].devices != stage.devices) {
        throw Error(file, stage_path(s, "devices"),
                    std::string("schedule ") + to_string(plan.schedule.kind) + " places stage " + std::to_string(s) + " on device group " + std::to_string(group) +
                        " with stage " + std::to_string(first->second) + ", but their devices differ",
                    "give it the devices of stage " + std::to_string(first->second) + ": " + format_device_list(plan.stages[first->second].devices));
      }
      check_same_layout(plan.stages[first->second], first->second, stage, s, file);
      continue;
    }
    first_stage_of_group[group] = s;
    for (int id : stage.devices) {
      auto other = group_of_device.find(id);
      if (other != group_of_device.end()) {
        throw Error(file, stage_path(s, "devices"),
                    "device " + std::to_string(id) + " is used twice: by stage " + std::to_string(stage_of_device[id]) + " (group " + std::to_string(other->second) +
                        ") and by stage " + std::to_string(s) + " (group " + std::to_string(group) + ")",
                    "each device belongs to one device group");
      }
      group_of_device[id] = group;
      stage_of_device[id] = s;
    }
  }
}

void check_precision(const Plan& plan, const std::string& file) {
  std::set<std::string> checked;
  for (const Stage& stage : plan.stages) {
    for (int id : stage.devices) {
      const DeviceProfile& profile = plan.cluster.profile_of(id);
      if (!checked.insert(profile.name).second) continue;
      try {
        effective_gemm_precision(plan.precision, plan.framework_precision, profile);
      } catch (const Error& e) {
        throw Error(file, "precision", std::string("precision ") + to_string(plan.precision) + " is unknown to device model '" + profile.name + "'", e.hint());
      }
    }
  }
}

}  // namespace

void validate_plan(const Plan& plan) {
  const std::string& file = plan.source_file;
  check_schedule(plan, file);
  check_layers(plan, file);
  for (int s = 0; s < static_cast<int>(plan.stages.size()); ++s) check_degrees(plan, s, file);
  check_placement(plan, file);
  check_precision(plan, file);
}

}  // namespace whale::plan

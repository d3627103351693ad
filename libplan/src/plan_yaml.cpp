// File: plan_yaml.cpp
// Reads and writes plan files (schema: docs/plan.md). The cluster and the model are referenced
// by path (relative to the plan's folder) or embedded as mappings.
#include <algorithm>
#include <filesystem>
#include <system_error>

#include "spec_yaml.h"
#include "whale/plan/atomic_file.h"
#include "whale/plan/error.h"
#include "whale/plan/limits.h"
#include "whale/plan/plan.h"
#include "yaml_writer.h"

namespace whale::plan {
namespace {

namespace fs = std::filesystem;

// A referenced spec file, resolved against the plan's folder; fails at `field` when missing.
std::string referenced_file(const YamlField& field, const std::string& folder) {
  const std::string resolved = resolve_path(folder, field.text());
  std::error_code error;  // the non-throwing checks: a name too long or unreadable is "not found"
  if (fs::is_directory(resolved, error)) field.fail("a file, got the folder '" + resolved + "'");
  if (!fs::is_regular_file(resolved, error)) {
    field.fail("file '" + resolved + "' not found", "paths are relative to the plan's folder");
  }
  return resolved;
}

Schedule parse_schedule(const YamlField& field) {
  Schedule schedule;
  const bool scalar = field.is_scalar();
  if (!scalar) field.expect_keys({"kind", "chunks"});
  const YamlField kind = scalar ? field : field.get("kind");
  if (!parse_schedule_kind(kind.text(), &schedule.kind)) {
    kind.fail("unknown schedule '" + kind.text() + "'", "use gpipe, 1f1b, interleaved-1f1b, wave or zb-h1");
  }
  if (!scalar && field.has("chunks")) schedule.chunks = static_cast<int>(field.get("chunks").count(kMaxLayers, "chunks"));
  return schedule;
}

Stage parse_stage(const YamlField& field, int micro_batch_size, int64_t device_count) {
  field.expect_keys({"layers", "devices", "tp", "shares", "recompute", "shard_optimizer",
                     "shard_gradients", "sequence_parallel", "ep", "expert_tp", "replica_tp",
                     "expert_counts"});
  Stage stage;
  const YamlField layers = field.get("layers");
  const std::vector<YamlField> range = layers.elements();
  if (range.size() != 2) layers.fail("expected [first, last] (inclusive layer indices)");
  stage.first_layer = range[0].non_negative_integer();
  const int last = range[1].non_negative_integer();
  if (last < stage.first_layer) layers.fail("expected first <= last, got [" + std::to_string(stage.first_layer) + ", " + std::to_string(last) + "]");
  stage.end_layer = last + 1;
  const YamlField devices = field.get("devices");
  if (devices.is_sequence()) {
    // A list holds its ids one by one: no expansion, so validate_plan checks them.
    for (const YamlField& id : devices.elements()) stage.devices.push_back(id.non_negative_integer());
  } else {
    stage.devices = parse_device_list(devices.text(), devices.file(), devices.path(), device_count);
  }
  if (stage.devices.empty()) devices.fail("expected at least one device", "device ids such as \"0-3\"");
  stage.tp = field.positive_integer_or("tp", 1);
  if (field.has("replica_tp")) {
    const YamlField replica_tp = field.get("replica_tp");
    if (field.has("tp")) {
      replica_tp.fail("give either tp (every replica) or replica_tp (one per replica), not both",
                      "drop tp: the replicas' degrees are in replica_tp");
    }
    for (const YamlField& degree : replica_tp.elements()) stage.replica_tps.push_back(degree.positive_integer());
    if (stage.replica_tps.empty()) replica_tp.fail("expected one tp degree per replica, got an empty list");
    // The finest shard: what the stage's gradient buckets count (validate_plan checks the rest).
    for (int degree : stage.replica_tps) stage.tp = std::max(stage.tp, degree);
  }
  if (field.has("shares")) {
    for (const YamlField& share : field.get("shares").elements()) stage.shares.push_back(share.positive_integer());
  } else if (stage.mixed_tp() || stage.devices.size() % stage.tp == 0) {
    const int dp = stage.dp();
    if (micro_batch_size % dp != 0) {
      throw Error(field.file(), field.key_path("shares"),
                  "missing field 'shares': micro_batch_size " + std::to_string(micro_batch_size) +
                      " does not split evenly over " + std::to_string(dp) + " replicas",
                  "give one share per replica, summing to micro_batch_size");
    }
    stage.shares.assign(dp, micro_batch_size / dp);
  }
  if (field.has("recompute")) {
    const YamlField recompute = field.get("recompute");
    if (!parse_recompute(recompute.text(), &stage.recompute)) {
      recompute.fail("unknown recompute '" + recompute.text() + "'", "use none, full or selective");
    }
  }
  stage.shard_optimizer = field.boolean_or("shard_optimizer", false);
  stage.shard_gradients = field.boolean_or("shard_gradients", false);
  stage.sequence_parallel = field.boolean_or("sequence_parallel", false);
  // Any integer here: validate_plan says what is wrong with it at this path.
  if (field.has("ep")) stage.ep = field.get("ep").integer();
  if (field.has("expert_tp")) {
    const YamlField expert_tp = field.get("expert_tp");
    stage.expert_tp = expert_tp.integer();
    if (stage.expert_tp <= 0) expert_tp.fail("expected a positive expert_tp, got " + std::to_string(stage.expert_tp), "leave it out for the stage's tp");
  }
  // Any integers here: validate_plan checks them against ep and the model's experts.
  if (field.has("expert_counts")) {
    for (const YamlField& count : field.get("expert_counts").elements()) stage.expert_counts.push_back(count.integer());
  }
  return stage;
}

// A path to `target` that works from `folder`.
std::string relative_to(const std::string& target, const std::string& folder) {
  std::error_code ec;
  const fs::path rel = fs::relative(fs::absolute(target), fs::absolute(folder), ec);
  return ec || rel.empty() ? fs::absolute(target).string() : rel.string();
}

// The plan as YAML; an empty reference embeds the cluster (model) as a mapping.
std::string plan_text(const Plan& plan, const std::string& cluster_ref, const std::string& model_ref) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "cluster" << YAML::Value;
  if (cluster_ref.empty()) emit_cluster(out, plan.cluster); else emit_text(out, cluster_ref);
  out << YAML::Key << "model" << YAML::Value;
  if (model_ref.empty()) emit_model(out, plan.model); else emit_text(out, model_ref);
  emit_text_field(out, "precision", to_string(plan.precision));
  emit_framework_precision(out, plan.framework_precision, plan.model.training.framework_precision);
  emit_number_field(out, "micro_batch_size", plan.micro_batch_size);
  emit_number_field(out, "micro_batches", plan.micro_batches);
  if (plan.gradient_bucket_mib != kDefaultGradientBucketMib)  // the default stays implicit
    emit_number_field(out, "gradient_bucket_mib", plan.gradient_bucket_mib);
  if (plan.moe_dispatcher != MoeDispatcher::alltoall)  // so does the default dispatcher
    emit_text_field(out, "moe_dispatcher", to_string(plan.moe_dispatcher));
  out << YAML::Key << "schedule" << YAML::Value << YAML::Flow << YAML::BeginMap;
  emit_text_field(out, "kind", to_string(plan.schedule.kind));
  emit_number_field(out, "chunks", plan.schedule.chunks);
  out << YAML::EndMap;
  out << YAML::Key << "stages" << YAML::Value << YAML::BeginSeq;
  for (const Stage& stage : plan.stages) {
    out << YAML::BeginMap;
    out << YAML::Key << "layers" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    emit_number(out, stage.first_layer);
    emit_number(out, stage.end_layer - 1);
    out << YAML::EndSeq;
    emit_text_field(out, "devices", format_device_list(stage.devices));
    if (stage.mixed_tp()) {
      out << YAML::Key << "replica_tp" << YAML::Value << YAML::Flow << YAML::BeginSeq;
      for (int degree : stage.replica_tps) emit_number(out, degree);
      out << YAML::EndSeq;
    } else {
      emit_number_field(out, "tp", stage.tp);
    }
    out << YAML::Key << "shares" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (int share : stage.shares) emit_number(out, share);
    out << YAML::EndSeq;
    emit_text_field(out, "recompute", to_string(stage.recompute));
    out << YAML::Key << "shard_optimizer" << YAML::Value << stage.shard_optimizer;
    // Written only when set, so plans without the newer strategies read as before.
    if (stage.shard_gradients) out << YAML::Key << "shard_gradients" << YAML::Value << true;
    if (stage.sequence_parallel) out << YAML::Key << "sequence_parallel" << YAML::Value << true;
    if (stage.ep != 1) emit_number_field(out, "ep", stage.ep);
    if (stage.expert_tp > 0) emit_number_field(out, "expert_tp", stage.expert_tp);
    if (!stage.expert_counts.empty()) {
      out << YAML::Key << "expert_counts" << YAML::Value << YAML::Flow << YAML::BeginSeq;
      for (int count : stage.expert_counts) emit_number(out, count);
      out << YAML::EndSeq;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace

Plan load_plan(const std::string& path, const std::string& profiles_dir) {
  const YamlField root = load_yaml_file(path);
  root.expect_keys({"cluster", "model", "profiles_dir", "precision", "allow_tf32",
                    "grad_reduce_precision", "master_weights", "micro_batch_size", "micro_batches",
                    "gradient_bucket_mib", "moe_dispatcher", "schedule", "stages"});
  const std::string folder = parent_folder(path);
  Plan plan;
  plan.source_file = path;
  std::string profiles = profiles_dir;
  if (profiles.empty() && root.has("profiles_dir")) profiles = resolve_path(folder, root.get("profiles_dir").text());
  if (profiles.empty()) profiles = default_profiles_dir();

  const YamlField cluster = root.get("cluster");
  if (cluster.is_map()) {
    plan.cluster = parse_cluster(cluster, profiles);
  } else {
    plan.cluster_file = cluster.text();
    plan.cluster = load_cluster(referenced_file(cluster, folder), profiles);
  }
  const YamlField model = root.get("model");
  if (model.is_map()) {
    plan.model = parse_model(model);
  } else {
    plan.model_file = model.text();
    plan.model = load_model(referenced_file(model, folder));
  }
  plan.precision = plan.model.training.precision;
  if (root.has("precision")) {
    const YamlField precision = root.get("precision");
    if (!parse_precision(precision.text(), &plan.precision)) {
      precision.fail("unknown precision '" + precision.text() + "'", "use fp32, tf32, fp16 or bf16");
    }
  }
  plan.framework_precision = parse_framework_precision(root, plan.model.training.framework_precision);
  if (plan.precision != plan.model.training.precision && plan.model.family != "listed") {
    generate_layers(plan.model, plan.precision);
  }
  plan.micro_batch_size = static_cast<int>(root.get("micro_batch_size").count(kMaxGlobalBatch, "samples per micro-batch"));
  plan.micro_batches = static_cast<int>(root.get("micro_batches").count(kMaxMicroBatches, "micro-batches"));
  plan.gradient_bucket_mib = root.positive_number_or("gradient_bucket_mib", kDefaultGradientBucketMib);
  if (root.has("moe_dispatcher")) {
    const YamlField dispatcher = root.get("moe_dispatcher");
    if (!parse_moe_dispatcher(dispatcher.text(), &plan.moe_dispatcher)) {
      dispatcher.fail("unknown dispatcher '" + dispatcher.text() + "'",
                      "use alltoall (Megatron's alltoall dispatcher, the default) or deepep (its flex dispatcher with DeepEP)");
    }
    if (!plan.model.moe) dispatcher.fail("moe_dispatcher " + dispatcher.text() + " needs a mixture-of-experts model (a moe: block)", "leave it out for a dense model");
  }
  plan.schedule = parse_schedule(root.get("schedule"));
  const YamlField stages = root.get("stages");
  for (const YamlField& stage : stages.elements()) plan.stages.push_back(parse_stage(stage, plan.micro_batch_size, static_cast<int64_t>(plan.cluster.devices.size())));
  if (plan.stages.empty()) stages.fail("expected at least one stage", "whale-plan --out writes a complete plan");
  validate_plan(plan);
  return plan;
}

std::string plan_to_yaml(const Plan& plan, bool embed) {
  return plan_text(plan, embed ? "" : plan.cluster_file, embed ? "" : plan.model_file);
}

void save_plan(const Plan& plan, const std::string& path, bool embed) {
  // References are rewritten relative to the new file's folder; a spec with no file is embedded.
  const std::string folder = parent_folder(path);
  const bool cluster_has_file = !plan.cluster_file.empty() && !plan.cluster.source_file.empty();
  const bool model_has_file = !plan.model_file.empty() && !plan.model.source_file.empty();
  const std::string cluster_ref = embed || !cluster_has_file ? "" : relative_to(plan.cluster.source_file, folder);
  const std::string model_ref = embed || !model_has_file ? "" : relative_to(plan.model.source_file, folder);
  write_file_atomically(path, plan_text(plan, cluster_ref, model_ref));
}

}  // namespace whale::plan

// File: device_profile_yaml.cpp
// Reads and writes profiles/<name>.yaml (schema: docs/profile.md).
#include <algorithm>
#include <filesystem>

#include "flash_attention_rates_yaml.h"
#include "spec_yaml.h"
#include "whale/plan/atomic_file.h"
#include "whale/plan/error.h"
#include "whale/plan/limits.h"
#include "yaml_writer.h"

namespace whale::plan {
namespace {

constexpr double kFlopsPerGflop = 1e9;
constexpr double kFlopsPerTflop = 1e12;
constexpr double kBytesPerMiB = 1024.0 * 1024.0;
constexpr double kSecondsPerUs = 1e-6;

const std::vector<Precision> kPrecisions = {Precision::fp32, Precision::tf32, Precision::fp16,
                                            Precision::bf16};

Precision precision_key(const YamlField& parent, const std::string& key) {
  Precision p;
  if (!parse_precision(key, &p)) {
    throw Error(parent.file(), parent.key_path(key), "unknown precision '" + key + "'",
                "use fp32, tf32, fp16 or bf16");
  }
  return p;
}

// A list of {size_key, value_key} points in increasing size: sizes > 0 (times `unit`), values in
// (0, 1], or in [0, 1] where `zero_allowed`.
EfficiencyCurve parse_points(const YamlField& list, const std::string& size_key, double unit,
                             const std::string& value_key, bool zero_allowed) {
  std::vector<EfficiencyPoint> points;
  for (const YamlField& item : list.elements()) {
    item.expect_keys({size_key, value_key});
    EfficiencyPoint point;
    point.size = item.get(size_key).positive_number() * unit;
    const YamlField value = item.get(value_key);
    if (zero_allowed) {
      point.efficiency = value.number_in(0, 1, "a share of the op time; whale-profile writes it");
    } else {
      point.efficiency = value.positive_number();
      if (point.efficiency > 1) value.fail("expected an efficiency in (0, 1], got " + format_number(point.efficiency));
    }
    if (!points.empty() && point.size <= points.back().size) {
      item.get(size_key).fail("expected sizes in increasing order", "sort the points by " + size_key);
    }
    points.push_back(point);
  }
  // An empty curve would read as 100% efficient at every size: a silent, optimistic default.
  if (points.empty()) {
    list.fail("expected at least one {" + size_key + ", " + value_key + "} point, got an empty list",
              "measure the device with whale-profile");
  }
  return EfficiencyCurve(std::move(points));
}

// A list of {<size_key>: size, efficiency: e}; sizes strictly increasing, efficiency in (0, 1].
EfficiencyCurve parse_curve(const YamlField& list, const std::string& size_key, double unit) {
  return parse_points(list, size_key, unit, "efficiency", false);
}

void emit_curve(YAML::Emitter& out, const EfficiencyCurve& curve, const std::string& size_key,
                double unit, const std::string& value_key = "efficiency") {
  out << YAML::BeginSeq;
  for (const EfficiencyPoint& point : curve.points()) {
    out << YAML::Flow << YAML::BeginMap;
    emit_number_field(out, size_key, point.size / unit);
    emit_number_field(out, value_key, point.efficiency);
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
}

// `calibration.gemm_shape_scale`: {small, medium, large}, each optional and > 0.
void parse_gemm_shape_scale(const YamlField& block, ProfileCalibration* c) {
  block.expect_keys({"small", "medium", "large"});
  c->gemm_small_scale = block.positive_number_or("small", 1.0);
  c->gemm_medium_scale = block.positive_number_or("medium", 1.0);
  c->gemm_large_scale = block.positive_number_or("large", 1.0);
}

// `calibration.links`: per link kind {bandwidth_scale > 0, latency_us >= 0}, each optional.
std::map<std::string, LinkCalibration> parse_link_calibrations(const YamlField& block) {
  if (!block.is_map()) {
    block.fail("expected a mapping of link kind to {bandwidth_scale, latency_us}",
               "e.g. links: {ethernet: {bandwidth_scale: 0.6, latency_us: 20}}");
  }
  std::map<std::string, LinkCalibration> out;
  for (const std::string& kind : block.keys()) {
    const YamlField entry = block.get(kind);
    entry.expect_keys({"bandwidth_scale", "latency_us"});
    LinkCalibration& link = out[kind];
    link.bandwidth_scale = entry.positive_number_or("bandwidth_scale", 1.0);
    if (entry.has("latency_us")) link.latency_s = entry.get("latency_us").non_negative_number() * kSecondsPerUs;
  }
  return out;
}

// The optional `calibration` block (docs/calibrate.md): scales > 0, overheads and reserve >= 0.
ProfileCalibration parse_calibration(const YamlField& block) {
  block.expect_keys({"source", "gemm_efficiency_scale", "memory_op_time_scale", "kernel_overhead_us",
                     "layer_overhead_us", "step_overhead_us", "micro_batch_overhead_us", "memory_reserve_gib", "activation_memory_scale",
                     "gemm_shape_scale", "links"});
  ProfileCalibration c;
  if (block.has("gemm_shape_scale")) parse_gemm_shape_scale(block.get("gemm_shape_scale"), &c);
  if (block.has("links")) c.links = parse_link_calibrations(block.get("links"));
  if (block.has("source")) c.source = block.get("source").text();
  if (block.has("gemm_efficiency_scale")) c.gemm_efficiency_scale = block.get("gemm_efficiency_scale").positive_number();
  if (block.has("memory_op_time_scale")) c.memory_op_time_scale = block.get("memory_op_time_scale").positive_number();
  const auto seconds = [&](const std::string& key) {
    return block.has(key) ? block.get(key).non_negative_number() * kSecondsPerUs : 0.0;
  };
  c.kernel_overhead_s = seconds("kernel_overhead_us");
  c.layer_overhead_s = seconds("layer_overhead_us");
  c.step_overhead_s = seconds("step_overhead_us");
  c.micro_batch_overhead_s = seconds("micro_batch_overhead_us");
  if (block.has("memory_reserve_gib")) {
    c.memory_reserve_bytes = block.get("memory_reserve_gib").non_negative_number() * kBytesPerGiB;
  }
  if (block.has("activation_memory_scale")) c.activation_memory_scale = block.get("activation_memory_scale").positive_number();
  return c;
}

void emit_calibration(YAML::Emitter& out, const ProfileCalibration& c) {
  out << YAML::Key << "calibration" << YAML::Value << YAML::BeginMap;
  emit_text_field(out, "source", c.source);
  emit_number_field(out, "gemm_efficiency_scale", c.gemm_efficiency_scale);
  emit_number_field(out, "memory_op_time_scale", c.memory_op_time_scale);
  emit_number_field(out, "kernel_overhead_us", c.kernel_overhead_s / kSecondsPerUs);
  emit_number_field(out, "layer_overhead_us", c.layer_overhead_s / kSecondsPerUs);
  emit_number_field(out, "step_overhead_us", c.step_overhead_s / kSecondsPerUs);
  if (c.micro_batch_overhead_s > 0) {
    emit_number_field(out, "micro_batch_overhead_us", c.micro_batch_overhead_s / kSecondsPerUs);
  }
  emit_number_field(out, "memory_reserve_gib", c.memory_reserve_bytes / kBytesPerGiB);
  emit_number_field(out, "activation_memory_scale", c.activation_memory_scale);
  out << YAML::Key << "gemm_shape_scale" << YAML::Value << YAML::Flow << YAML::BeginMap;
  emit_number_field(out, "small", c.gemm_small_scale);
  emit_number_field(out, "medium", c.gemm_medium_scale);
  emit_number_field(out, "large", c.gemm_large_scale);
  out << YAML::EndMap;
  if (!c.links.empty()) {
    out << YAML::Key << "links" << YAML::Value << YAML::BeginMap;
    for (const auto& [kind, link] : c.links) {
      out << YAML::Key << kind << YAML::Value << YAML::Flow << YAML::BeginMap;
      emit_number_field(out, "bandwidth_scale", link.bandwidth_scale);
      emit_number_field(out, "latency_us", link.latency_s / kSecondsPerUs);
      out << YAML::EndMap;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
}

// A GiB field as bytes: > 0 (>= 0 when `zero_allowed`), at most kMaxMemoryGib.
Bytes gib_field_bytes(const YamlField& field, bool zero_allowed) {
  const double gib = zero_allowed ? field.non_negative_number() : field.positive_number();
  if (gib > kMaxMemoryGib) {
    field.fail("expected at most " + format_number(kMaxMemoryGib) + " GiB, got " + format_number(gib),
               "whale's limit on device memory (docs/limits.md); check the unit");
  }
  return gib * kBytesPerGiB;
}

// The optional `framework_memory` block (docs/profile.md); a missing key keeps the kind's
// default.
FrameworkMemory parse_framework_memory(const YamlField& block, const std::string& device_kind) {
  block.expect_keys({"source", "reserve_gib", "allocator_slack_fraction", "attention_implementation",
                     "fused_attention", "cross_entropy_implementation", "gradients_freed_after_step",
                     "gradient_bucket_copy", "fp32_gradient_copy", "stage_buffer_cache", "dropout_masks_kept",
                     "sharded_gradients_held_whole", "master_weights_held_whole"});
  FrameworkMemory f = default_framework_memory(device_kind);
  f.source = block.get("source").text();
  if (block.has("reserve_gib")) f.reserve_bytes = gib_field_bytes(block.get("reserve_gib"), true);
  if (block.has("allocator_slack_fraction")) {
    const YamlField slack = block.get("allocator_slack_fraction");
    f.allocator_slack_fraction = slack.non_negative_number();
    if (f.allocator_slack_fraction > 1) {
      slack.fail("expected a fraction in [0, 1], got " + format_number(f.allocator_slack_fraction),
                 "0.05 means 5% on top of the tensors' peak");
    }
  }
  if (block.has("attention_implementation")) {
    const YamlField attention = block.get("attention_implementation");
    if (block.has("fused_attention")) {
      block.get("fused_attention").fail("either attention_implementation or fused_attention, not both",
                                        "fused_attention: true is attention_implementation: flash");
    }
    if (!parse_attention_implementation(attention.text(), &f.attention)) {
      attention.fail("eager, fused_softmax or flash, got '" + attention.text() + "'",
                     "flash (or sdpa) for FlashAttention and PyTorch's fused SDPA backends");
    }
  } else if (block.has("fused_attention")) {
    // The older flag: true meant flash attention, false Megatron-LM's fused softmax.
    f.attention = block.get("fused_attention").boolean() ? AttentionImplementation::flash
                                                         : AttentionImplementation::fused_softmax;
  }
  if (block.has("cross_entropy_implementation")) {
    const YamlField loss = block.get("cross_entropy_implementation");
    if (!parse_cross_entropy_implementation(loss.text(), &f.cross_entropy)) {
      loss.fail("fused or pytorch, got '" + loss.text() + "'",
                "pytorch for torch.nn.functional.cross_entropy, fused for Megatron-LM's vocab-parallel loss");
    }
  }
  f.gradients_freed_after_step = block.boolean_or("gradients_freed_after_step", f.gradients_freed_after_step);
  f.gradient_bucket_copy = block.boolean_or("gradient_bucket_copy", f.gradient_bucket_copy);
  f.fp32_gradient_copy = block.boolean_or("fp32_gradient_copy", f.fp32_gradient_copy);
  f.stage_buffer_cache = block.boolean_or("stage_buffer_cache", f.stage_buffer_cache);
  f.dropout_masks_kept = block.boolean_or("dropout_masks_kept", f.dropout_masks_kept);
  f.sharded_gradients_held_whole = block.boolean_or("sharded_gradients_held_whole", f.sharded_gradients_held_whole);
  f.master_weights_held_whole = block.boolean_or("master_weights_held_whole", f.master_weights_held_whole);
  return f;
}

// The framework's reserve and the calibrated reserve leave the tensors some of memory_gib;
// otherwise every plan would read as out of memory with 0 GiB usable. Names the field that
// overflows (the default reserve of a gpu profile: memory_gib).
void check_reserves(const YamlField& root, const DeviceProfile& profile) {
  const Bytes memory = profile.memory_bytes;
  const Bytes framework = profile.framework_memory.reserve_bytes;
  const std::string memory_text = format_number(memory / kBytesPerGiB) + " GiB";
  if (framework >= memory) {
    const bool given = root.has("framework_memory") && root.get("framework_memory").has("reserve_gib");
    if (!given) {
      root.get("memory_gib").fail("expected more than the " + format_number(framework / kBytesPerGiB) +
                                      " GiB that a " + profile.kind + " profile reserves for its framework, got " +
                                      memory_text,
                                  "add framework_memory: {source: ..., reserve_gib: ...} with a smaller reserve");
    }
    root.get("framework_memory").get("reserve_gib").fail(
        "expected a reserve below memory_gib (" + memory_text + "), got " + format_number(framework / kBytesPerGiB),
        "the framework's fixed bytes per device; the rest of the memory holds the model's tensors");
  }
  const Bytes calibrated = profile.calibration.memory_reserve_bytes;
  if (framework + calibrated >= memory) {
    root.get("calibration").get("memory_reserve_gib").fail(
        "expected a reserve below memory_gib less framework_memory.reserve_gib (" + memory_text + " - " +
            format_number(framework / kBytesPerGiB) + " GiB), got " + format_number(calibrated / kBytesPerGiB),
        "recalibrate with whale-calibrate, or remove the figure");
  }
}

void emit_framework_memory(YAML::Emitter& out, const FrameworkMemory& f, const std::string& device_kind) {
  out << YAML::Key << "framework_memory" << YAML::Value << YAML::BeginMap;
  emit_text_field(out, "source", f.source);
  emit_number_field(out, "reserve_gib", f.reserve_bytes / kBytesPerGiB);
  emit_number_field(out, "allocator_slack_fraction", f.allocator_slack_fraction);
  emit_text_field(out, "attention_implementation", to_string(f.attention));
  if (f.cross_entropy != CrossEntropyImplementation::fused)
    emit_text_field(out, "cross_entropy_implementation", to_string(f.cross_entropy));
  if (f.gradients_freed_after_step) out << YAML::Key << "gradients_freed_after_step" << YAML::Value << true;
  if (f.gradient_bucket_copy) out << YAML::Key << "gradient_bucket_copy" << YAML::Value << true;
  if (f.fp32_gradient_copy) out << YAML::Key << "fp32_gradient_copy" << YAML::Value << true;
  if (f.stage_buffer_cache != default_framework_memory(device_kind).stage_buffer_cache)
    out << YAML::Key << "stage_buffer_cache" << YAML::Value << f.stage_buffer_cache;
  if (f.dropout_masks_kept != default_framework_memory(device_kind).dropout_masks_kept)
    out << YAML::Key << "dropout_masks_kept" << YAML::Value << f.dropout_masks_kept;
  if (f.sharded_gradients_held_whole != default_framework_memory(device_kind).sharded_gradients_held_whole)
    out << YAML::Key << "sharded_gradients_held_whole" << YAML::Value << f.sharded_gradients_held_whole;
  if (f.master_weights_held_whole != default_framework_memory(device_kind).master_weights_held_whole)
    out << YAML::Key << "master_weights_held_whole" << YAML::Value << f.master_weights_held_whole;
  out << YAML::EndMap;
}

// The optional `layer_times` block (docs/profile.md): a source, an optional measured optimizer
// step per parameter (> 0 seconds) and at least one measurement,
// each of a known layer kind, tp >= 1, micro_batch > 0 and times > 0; one per (kind, tp,
// micro_batch).
LayerTimes parse_layer_times(const YamlField& block) {
  block.expect_keys({"source", "measurements", "optimizer_s_per_parameter"});
  LayerTimes times;
  times.source = block.get("source").text();
  if (block.has("optimizer_s_per_parameter")) {
    times.optimizer_s_per_parameter = block.get("optimizer_s_per_parameter").positive_number();
  }
  const YamlField list = block.get("measurements");
  for (const YamlField& item : list.elements()) {
    item.expect_keys({"layer_kind", "tp", "micro_batch", "forward_s", "backward_s"});
    MeasuredLayerTime m;
    const YamlField kind = item.get("layer_kind");
    if (!parse_layer_kind(kind.text(), &m.kind)) {
      kind.fail("expected a layer kind, got '" + kind.text() + "'", "use embedding, transformer, head or custom");
    }
    m.tp = item.get("tp").positive_integer();
    m.micro_batch = item.get("micro_batch").positive_number();
    m.forward_s = item.get("forward_s").positive_number();
    m.backward_s = item.get("backward_s").positive_number();
    for (const MeasuredLayerTime& other : times.measurements) {
      if (other.kind == m.kind && other.tp == m.tp && other.micro_batch == m.micro_batch) {
        item.fail("expected one measurement per (layer_kind, tp, micro_batch), got a second one",
                  "remove the duplicate or keep the median of both");
      }
    }
    times.measurements.push_back(m);
  }
  if (times.empty()) list.fail("expected at least one measurement, got an empty list", "remove the block instead");
  return times;
}

void emit_layer_times(YAML::Emitter& out, const LayerTimes& times) {
  out << YAML::Key << "layer_times" << YAML::Value << YAML::BeginMap;
  emit_text_field(out, "source", times.source);
  if (times.optimizer_s_per_parameter > 0) {
    emit_number_field(out, "optimizer_s_per_parameter", times.optimizer_s_per_parameter);
  }
  out << YAML::Key << "measurements" << YAML::Value << YAML::BeginSeq;
  for (const MeasuredLayerTime& m : times.measurements) {
    out << YAML::Flow << YAML::BeginMap;
    emit_text_field(out, "layer_kind", to_string(m.kind));
    emit_number_field(out, "tp", m.tp);
    emit_number_field(out, "micro_batch", m.micro_batch);
    emit_number_field(out, "forward_s", m.forward_s);
    emit_number_field(out, "backward_s", m.backward_s);
    out << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
}

/// GEMM efficiency curves by precision key (fp32, tf32, fp16, bf16), sizes in GFLOP.
std::map<Precision, EfficiencyCurve> parse_gemm_curves(const YamlField& field) {
  field.expect_keys({"fp32", "tf32", "fp16", "bf16"});
  std::map<Precision, EfficiencyCurve> curves;
  for (const std::string& key : field.keys()) {
    curves[precision_key(field, key)] = parse_curve(field.get(key), "gflop", kFlopsPerGflop);
  }
  return curves;
}

void emit_gemm_curves(YAML::Emitter& out, const std::string& key,
                      const std::map<Precision, EfficiencyCurve>& curves) {
  out << YAML::Key << key << YAML::Value << YAML::BeginMap;
  for (Precision p : kPrecisions) {
    auto it = curves.find(p);
    if (it == curves.end()) continue;
    out << YAML::Key << to_string(p) << YAML::Value;
    emit_curve(out, it->second, "gflop", kFlopsPerGflop);
  }
  out << YAML::EndMap;
}

/// Op-class bandwidths in GB/s, keyed by class name.
std::map<std::string, BytesPerSecond> parse_op_bandwidths(const YamlField& field) {
  std::map<std::string, BytesPerSecond> bandwidths;
  for (const std::string& key : field.keys()) {
    bandwidths[key] = gbytes_per_s_to_bytes_per_s(field.get(key).positive_number());
  }
  return bandwidths;
}

/// The backward figures of `field`: each class must be one of `forward`'s (a backward's bytes
/// are counted as its forward's).
std::map<std::string, BytesPerSecond> parse_op_backward_bandwidths(
    const YamlField& field, const std::map<std::string, BytesPerSecond>& forward, const std::string& forward_key) {
  for (const std::string& key : field.keys()) {
    if (forward.count(key) == 0) {
      field.get(key).fail("an op class of " + forward_key + ", got '" + key + "', which it lacks",
                          "give the class's forward figure in " + forward_key + " too, or drop it here");
    }
  }
  return parse_op_bandwidths(field);
}

/// Writes `bandwidths` under `key`; nothing when it is empty.
void emit_op_bandwidths(YAML::Emitter& out, const std::string& key,
                        const std::map<std::string, BytesPerSecond>& bandwidths) {
  if (bandwidths.empty()) return;
  out << YAML::Key << key << YAML::Value << YAML::BeginMap;
  for (const auto& [op, bandwidth] : bandwidths) emit_number_field(out, op, bandwidth / 1e9);
  out << YAML::EndMap;
}

CacheResidency parse_cache(const YamlField& field) {
  field.expect_keys({"last_level_cache_mib_per_device", "warm_gemm_efficiency",
                     "warm_op_bandwidth_gbytes_per_s", "warm_op_backward_bandwidth_gbytes_per_s",
                     "warm_fraction_by_working_set"});
  CacheResidency cache;
  cache.cache_bytes_per_device =
      field.get("last_level_cache_mib_per_device").positive_number() * kBytesPerMiB;
  cache.warm_gemm_efficiency = parse_gemm_curves(field.get("warm_gemm_efficiency"));
  if (field.has("warm_op_bandwidth_gbytes_per_s")) {
    cache.warm_op_bandwidth_bytes_per_s = parse_op_bandwidths(field.get("warm_op_bandwidth_gbytes_per_s"));
  }
  if (field.has("warm_op_backward_bandwidth_gbytes_per_s")) {
    cache.warm_op_backward_bandwidth_bytes_per_s =
        parse_op_backward_bandwidths(field.get("warm_op_backward_bandwidth_gbytes_per_s"),
                                     cache.warm_op_bandwidth_bytes_per_s, "cache.warm_op_bandwidth_gbytes_per_s");
  }
  if (field.has("warm_fraction_by_working_set")) {
    cache.warm_fraction_by_working_set =
        parse_points(field.get("warm_fraction_by_working_set"), "working_set_mib", kBytesPerMiB, "warm_fraction", true);
  }
  return cache;
}

void emit_cache(YAML::Emitter& out, const CacheResidency& cache) {
  out << YAML::Key << "cache" << YAML::Value << YAML::BeginMap;
  emit_number_field(out, "last_level_cache_mib_per_device", cache.cache_bytes_per_device / kBytesPerMiB);
  emit_gemm_curves(out, "warm_gemm_efficiency", cache.warm_gemm_efficiency);
  emit_op_bandwidths(out, "warm_op_bandwidth_gbytes_per_s", cache.warm_op_bandwidth_bytes_per_s);
  emit_op_bandwidths(out, "warm_op_backward_bandwidth_gbytes_per_s", cache.warm_op_backward_bandwidth_bytes_per_s);
  if (!cache.warm_fraction_by_working_set.empty()) {
    out << YAML::Key << "warm_fraction_by_working_set" << YAML::Value;
    emit_curve(out, cache.warm_fraction_by_working_set, "working_set_mib", kBytesPerMiB, "warm_fraction");
  }
  out << YAML::EndMap;
}

}  // namespace

DeviceProfile parse_device_profile(const YamlField& root, const std::string& expected_name) {
  root.expect_keys({"name", "kind", "source", "memory_gib", "memory_bandwidth_gbytes_per_s",
                    "peak_tflops", "kernel_launch_us", "gemm_efficiency", "memory_efficiency",
                    "slowdown_factor", "op_bandwidth_gbytes_per_s", "op_backward_bandwidth_gbytes_per_s",
                    "framework_memory",
                    "calibration", "layer_times", "cache", "flash_attention_tflops"});
  DeviceProfile profile;
  const YamlField name = root.get("name");
  profile.name = name.text();
  if (!expected_name.empty() && profile.name != expected_name) {
    name.fail("expected name '" + expected_name + "' (the file name), got '" + profile.name + "'",
              "rename the file or the profile");
  }
  const YamlField kind = root.get("kind");
  profile.kind = kind.text();
  if (profile.kind != "gpu" && profile.kind != "cpu") kind.fail("expected gpu or cpu, got '" + profile.kind + "'");
  profile.source = root.get("source").text();
  profile.memory_bytes = gib_field_bytes(root.get("memory_gib"), false);
  profile.memory_bandwidth_bytes_per_s =
      gbytes_per_s_to_bytes_per_s(root.get("memory_bandwidth_gbytes_per_s").positive_number());
  const YamlField peaks = root.get("peak_tflops");
  peaks.expect_keys({"fp32", "tf32", "fp16", "bf16"});
  peaks.get("fp32");  // required: every device computes in fp32
  for (const std::string& key : peaks.keys()) {
    profile.peak_flops_per_s[precision_key(peaks, key)] =
        peaks.get(key).positive_number() * kFlopsPerTflop;
  }
  profile.kernel_launch_s = root.get("kernel_launch_us").non_negative_number() * kSecondsPerUs;
  profile.gemm_efficiency = parse_gemm_curves(root.get("gemm_efficiency"));
  profile.memory_efficiency = parse_curve(root.get("memory_efficiency"), "mib", kBytesPerMiB);
  if (root.has("slowdown_factor")) {
    const YamlField slow = root.get("slowdown_factor");
    profile.slowdown_factor = slow.positive_number();
    if (profile.slowdown_factor < 1) slow.fail("expected a slowdown_factor >= 1");
  }
  if (root.has("op_bandwidth_gbytes_per_s")) {
    profile.op_bandwidth_bytes_per_s = parse_op_bandwidths(root.get("op_bandwidth_gbytes_per_s"));
  }
  if (root.has("op_backward_bandwidth_gbytes_per_s")) {
    profile.op_backward_bandwidth_bytes_per_s =
        parse_op_backward_bandwidths(root.get("op_backward_bandwidth_gbytes_per_s"),
                                     profile.op_bandwidth_bytes_per_s, "op_bandwidth_gbytes_per_s");
  }
  profile.framework_memory = root.has("framework_memory")
                                 ? parse_framework_memory(root.get("framework_memory"), profile.kind)
                                 : default_framework_memory(profile.kind);
  if (root.has("calibration")) profile.calibration = parse_calibration(root.get("calibration"));
  check_reserves(root, profile);
  if (root.has("layer_times")) profile.layer_times = parse_layer_times(root.get("layer_times"));
  if (root.has("cache")) profile.cache = parse_cache(root.get("cache"));
  if (root.has("flash_attention_tflops"))
    profile.flash_attention = parse_flash_attention_rates(root.get("flash_attention_tflops"));
  return profile;
}

DeviceProfile load_device_profile(const std::string& path) {
  return parse_device_profile(load_yaml_file(path), file_stem(path));
}

void save_device_profile(const DeviceProfile& profile, const std::string& path) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  emit_text_field(out, "name", profile.name);
  emit_text_field(out, "kind", profile.kind);
  emit_text_field(out, "source", profile.source);
  emit_number_field(out, "memory_gib", profile.memory_bytes / kBytesPerGiB);
  emit_number_field(out, "memory_bandwidth_gbytes_per_s", profile.memory_bandwidth_bytes_per_s / 1e9);
  out << YAML::Key << "peak_tflops" << YAML::Value << YAML::BeginMap;
  for (Precision p : kPrecisions) {
    auto it = profile.peak_flops_per_s.find(p);
    if (it != profile.peak_flops_per_s.end()) emit_number_field(out, to_string(p), it->second / kFlopsPerTflop);
  }
  out << YAML::EndMap;
  emit_number_field(out, "kernel_launch_us", profile.kernel_launch_s / kSecondsPerUs);
  emit_gemm_curves(out, "gemm_efficiency", profile.gemm_efficiency);
  out << YAML::Key << "memory_efficiency" << YAML::Value;
  emit_curve(out, profile.memory_efficiency, "mib", kBytesPerMiB);
  if (profile.slowdown_factor != 1.0) emit_number_field(out, "slowdown_factor", profile.slowdown_factor);
  emit_op_bandwidths(out, "op_bandwidth_gbytes_per_s", profile.op_bandwidth_bytes_per_s);
  emit_op_bandwidths(out, "op_backward_bandwidth_gbytes_per_s", profile.op_backward_bandwidth_bytes_per_s);
  if (!(profile.framework_memory == default_framework_memory(profile.kind))) {
    emit_framework_memory(out, profile.framework_memory, profile.kind);
  }
  if (!profile.calibration.is_default()) emit_calibration(out, profile.calibration);
  if (!profile.layer_times.empty()) emit_layer_times(out, profile.layer_times);
  if (!profile.cache.empty()) emit_cache(out, profile.cache);
  if (!profile.flash_attention.empty()) emit_flash_attention_rates(out, profile.flash_attention);
  out << YAML::EndMap;
  write_file_atomically(path, std::string(out.c_str()) + "\n");
}

std::vector<std::string> available_profiles(const std::string& profiles_dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(profiles_dir, ec)) {
    if (entry.path().extension() == ".yaml") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace whale::plan

// File: spec_yaml.h
// Private parse/emit entry points of the spec readers, shared by the file loaders and by the
// plan reader, which may embed a cluster and a model. Private to libplan.
#pragma once

#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "whale/plan/cluster.h"
#include "whale/plan/device_profile.h"
#include "whale/plan/model.h"
#include "yaml_reader.h"

namespace whale::plan {

/// A profile from its YAML mapping (the name must match `expected_name` when not empty).
DeviceProfile parse_device_profile(const YamlField& root, const std::string& expected_name);
/// Names of the profiles (`*.yaml` stems) in a folder, sorted.
std::vector<std::string> available_profiles(const std::string& profiles_dir);

/// A cluster from its YAML mapping; device models are resolved in `profiles_dir`.
Cluster parse_cluster(const YamlField& root, const std::string& profiles_dir);
/// Emits the cluster as one mapping, one node entry per node.
void emit_cluster(YAML::Emitter& out, const Cluster& cluster);

/// A model from its YAML mapping; family models get their layers at the training precision.
Model parse_model(const YamlField& root);
/// Whether a model file is a Hugging Face config.json: by its .json name, or by its content (a
/// mapping with model_type).
bool is_hf_config(const YamlField& root, const std::string& path);
/// A family model from a Hugging Face config.json (model_hf.cpp; mapping in docs/model.md).
Model parse_hf_config(const YamlField& root);
/// The mixture-of-experts decoders' model_type values: mixtral, qwen2_moe, qwen3_moe, olmoe.
bool is_hf_moe_type(const std::string& model_type);
/// The moe block of such a config (model_hf_moe.cpp), after the llama-style shape of `model`;
/// a router or layer pattern whale cannot express fails at its key.
MoeSpec read_hf_moe(const YamlField& root, const std::string& model_type, const Model& model);
/// Fails on multi-head latent attention (DeepSeek-V2/V3's kv_lora_rank, q_lora_rank), naming it.
void reject_latent_attention(const YamlField& root);
/// The integer at a config.json key in its range (model_hf.cpp), and whether a key is absent
/// or null.
int hf_config_integer(const YamlField& root, const std::string& key);
bool hf_config_is_null(const YamlField& root, const std::string& key);
/// The field at a config.json key that must hold a number; a quoted one ("4096") fails there:
/// transformers writes numbers unquoted, so a string is a damaged or hand-edited file. (Whale's
/// own YAML files read a quoted number as the number.)
YamlField hf_config_number_field(const YamlField& root, const std::string& key);
/// Emits the model as one mapping.
void emit_model(YAML::Emitter& out, const Model& model);
/// A model's `moe:` mapping (moe_yaml.cpp), read after the family hyperparameters of `model`
/// (expert_ffn_hidden defaults to its ffn_hidden; first_dense_layers is checked against its
/// blocks). Throws whale::Error at the offending key.
MoeSpec parse_moe(const YamlField& field, const Model& model);
/// Emits `moe:` and every field of `spec`.
void emit_moe(YAML::Emitter& out, const MoeSpec& spec);

/// The framework's precision settings of `field` (a model's training section or a plan), from its
/// optional keys allow_tf32, grad_reduce_precision and master_weights, each key absent taken
/// from `defaults`. Throws
/// whale::Error at the key for a wrong type or an unknown value.
FrameworkPrecision parse_framework_precision(const YamlField& field, const FrameworkPrecision& defaults);
/// Emits the keys whose value is not the built-in default or differs from what the file
/// implies without them (`implied`: a plan's model); files of default settings read as before.
void emit_framework_precision(YAML::Emitter& out, const FrameworkPrecision& settings,
                              const FrameworkPrecision& implied);

}  // namespace whale::plan

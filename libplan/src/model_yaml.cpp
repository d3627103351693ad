// File: model_yaml.cpp
// Reads and writes configs/models/<name>.yaml (schema: docs/model.md): a family model by its
// hyperparameters, or a listed model layer by layer.
#include "spec_yaml.h"
#include "whale/plan/atomic_file.h"
#include "whale/plan/error.h"
#include "whale/plan/limits.h"
#include "yaml_writer.h"

namespace whale::plan {
namespace {

// Numeric fields of a listed layer, with where each lives in Layer (all >= 0, default 0).
struct LayerNumber {
  const char* key;
  double Layer::*field;
  bool required;
};
const LayerNumber kLayerNumbers[] = {
    {"parameters", &Layer::parameters, true},
    {"parameters_replicated", &Layer::parameters_replicated, false},
    {"activation_bytes_replicated", &Layer::activation_bytes_replicated, false},
    {"activation_bytes_split", &Layer::activation_bytes_split, false},
    {"activation_bytes_attention", &Layer::activation_bytes_attention, false},
    {"dropout_mask_bytes", &Layer::dropout_mask_bytes, false},
    {"attention_output_bytes", &Layer::attention_output_bytes, false},
    {"input_bytes", &Layer::input_bytes, false},
    {"backward_buffer_bytes_split", &Layer::backward_buffer_bytes_split, false},
    {"backward_buffer_bytes_replicated", &Layer::backward_buffer_bytes_replicated, false},
    {"output_bytes", &Layer::output_bytes, true},
    {"tp_allreduce_bytes", &Layer::tp_allreduce_bytes, false},
};

Training parse_training(const YamlField& field) {
  field.expect_keys({"global_batch", "precision", "optimizer", "allow_tf32", "grad_reduce_precision",
                     "master_weights"});
  Training training;
  training.global_batch = static_cast<int>(field.get("global_batch").count(kMaxGlobalBatch, "samples per global batch"));
  const YamlField precision = field.get("precision");
  if (!parse_precision(precision.text(), &training.precision)) {
    precision.fail("unknown precision '" + precision.text() + "'", "use fp32, tf32, fp16 or bf16");
  }
  if (field.has("optimizer")) {
    const YamlField optimizer = field.get("optimizer");
    training.optimizer = optimizer.text();
    if (training.optimizer != "adamw" && training.optimizer != "adam" && training.optimizer != "sgd") {
      optimizer.fail("unknown optimizer '" + training.optimizer + "'", "use adamw, adam or sgd");
    }
  }
  training.framework_precision = parse_framework_precision(field, FrameworkPrecision{});
  return training;
}

Layer parse_listed_layer(const YamlField& field) {
  std::vector<std::string> allowed = {"name", "kind", "gemms", "memory_ops"};
  for (const LayerNumber& number : kLayerNumbers) allowed.push_back(number.key);
  field.expect_keys(allowed);
  Layer layer;
  layer.name = field.get("name").text();
  if (field.has("kind")) {
    const YamlField kind = field.get("kind");
    if (!parse_layer_kind(kind.text(), &layer.kind)) kind.fail("unknown layer kind '" + kind.text() + "'", "use embedding, transformer, head or custom");
  }
  for (const LayerNumber& number : kLayerNumbers) {
    if (number.required || field.has(number.key)) layer.*number.field = field.get(number.key).non_negative_number();
  }
  if (field.has("gemms")) {
    for (const YamlField& item : field.get("gemms").elements()) {
      item.expect_keys({"name", "m", "n", "k", "count", "tp_split"});
      layer.gemms.push_back(GemmOp{item.get("name").text(), item.get("m").positive_number(),
                                   item.get("n").positive_number(), item.get("k").positive_number(),
                                   item.positive_number_or("count", 1), item.boolean_or("tp_split", true)});
    }
  }
  if (field.has("memory_ops")) {
    for (const YamlField& item : field.get("memory_ops").elements()) {
      item.expect_keys({"name", "bytes", "tp_split"});
      layer.memory_ops.push_back(MemoryOp{item.get("name").text(), item.get("bytes").positive_number(),
                                          item.boolean_or("tp_split", false)});
    }
  }
  return layer;
}

/// A model dimension (hidden, ffn_hidden, sequence, vocabulary): a count up to
/// kMaxModelDimension, so that products of two fit in 64 bits.
int dimension(const YamlField& field) {
  return static_cast<int>(field.count(kMaxModelDimension, "units of a model dimension"));
}

/// A dropout probability: a number in [0, 1).
double dropout_probability(const YamlField& field) {
  const double p = field.non_negative_number();
  if (p >= 1) field.fail("expected a dropout probability in [0, 1), got " + format_number(p), "0.1 drops 10% of the elements");
  return p;
}

void parse_family_hyperparameters(const YamlField& root, Model& model) {
  model.num_layers = static_cast<int>(root.get("layers").count(kMaxLayers, "layers"));
  model.hidden = dimension(root.get("hidden"));
  const YamlField heads = root.get("heads");
  model.heads = heads.positive_integer();
  if (root.has("head_dim")) {
    // An explicit head width frees the attention width (heads x head_dim) from hidden.
    const YamlField head_dim = root.get("head_dim");
    model.head_dim = dimension(head_dim);
    if (int64_t{model.heads} * model.head_dim > kMaxModelDimension) {
      head_dim.fail("expected heads x head_dim at most " + std::to_string(kMaxModelDimension) + ", got " +
                        std::to_string(int64_t{model.heads} * model.head_dim),
                    "whale's limit on a model dimension (docs/limits.md)");
    }
  } else if (model.hidden % model.heads != 0) {
    heads.fail("expected heads to divide hidden (" + std::to_string(model.hidden) + ")", "or give head_dim");
  }
  model.sequence = dimension(root.get("sequence"));
  model.vocabulary = dimension(root.get("vocabulary"));
  if (model.family == "llama" || root.has("ffn_hidden")) {
    model.ffn_hidden = dimension(root.get("ffn_hidden"));
  } else {
    model.ffn_hidden = 4 * model.hidden;  // hidden <= kMaxModelDimension: no overflow
  }
  if (root.has("kv_heads")) {
    const YamlField kv = root.get("kv_heads");
    if (model.family != "llama") kv.fail("kv_heads applies to family llama only");
    model.kv_heads = kv.positive_integer();
    if (model.heads % model.kv_heads != 0) kv.fail("expected kv_heads to divide heads (" + std::to_string(model.heads) + ")");
  }
  model.tie_embeddings = root.boolean_or("tie_embeddings", false);
  if (root.has("qkv_bias")) {
    const YamlField bias = root.get("qkv_bias");
    if (model.family != "llama") bias.fail("qkv_bias applies to family llama only", "gpt and bert blocks always have biases");
    model.qkv_bias = bias.boolean();
  }
  if (root.has("rope_theta")) {
    const YamlField theta = root.get("rope_theta");
    if (model.family == "bert") theta.fail("rope_theta applies to families gpt and llama only");
    model.rope_theta = theta.positive_number();
  }
  if (root.has("attention_dropout")) model.attention_dropout = dropout_probability(root.get("attention_dropout"));
  if (root.has("hidden_dropout")) {
    const YamlField hidden = root.get("hidden_dropout");
    if (model.family == "llama") hidden.fail("hidden_dropout applies to families gpt and bert only", "a llama block has no hidden dropout");
    model.hidden_dropout = dropout_probability(hidden);
  }
}

}  // namespace

Model parse_model(const YamlField& root) {
  root.expect_keys({"name", "family", "layers", "hidden", "heads", "head_dim", "ffn_hidden", "kv_heads",
                    "tie_embeddings", "qkv_bias", "rope_theta", "attention_dropout",
                    "hidden_dropout", "sequence", "vocabulary", "training", "layer_list", "moe"});
  Model model;
  model.source_file = root.file();
  model.name = root.get("name").text();
  const YamlField family = root.get("family");
  model.family = family.text();
  model.training = parse_training(root.get("training"));
  if (model.family == "listed") {
    for (const char* key : {"layers", "hidden", "head_dim", "ffn_hidden", "kv_heads", "vocabulary", "tie_embeddings",
                            "qkv_bias", "rope_theta", "attention_dropout", "hidden_dropout", "moe"}) {
      if (root.has(key)) root.get(key).fail(std::string(key) + " applies to family models only", "give layer_list entries instead");
    }
    // Optional for a listed model: tokens per sample (for tokens/s) and heads (bounds tp).
    if (root.has("sequence")) model.sequence = dimension(root.get("sequence"));
    if (root.has("heads")) model.heads = root.get("heads").positive_integer();
    const YamlField list = root.get("layer_list");
    if (list.is_sequence() && static_cast<int64_t>(list.node().size()) > kMaxLayers) {
      list.fail("expected at most " + std::to_string(kMaxLayers) + " layers, got " +
                    std::to_string(list.node().size()),
                "whale's limit on layers (docs/limits.md)");
    }
    for (const YamlField& item : list.elements()) model.layers.push_back(parse_listed_layer(item));
    if (model.layers.empty()) list.fail("expected at least one layer", "list each layer with its kind, parameters and gemms (docs/model.md)");
    return model;
  }
  if (model.family != "gpt" && model.family != "bert" && model.family != "llama") {
    family.fail("unknown family '" + model.family + "'", "use gpt, bert, llama or listed");
  }
  if (root.has("layer_list")) root.get("layer_list").fail("layer_list applies to family listed only");
  parse_family_hyperparameters(root, model);
  if (root.has("moe")) model.moe = parse_moe(root.get("moe"), model);
  generate_layers(model, model.training.precision);
  return model;
}

Model load_model(const std::string& path) {
  const YamlField root = load_yaml_file(path);
  return is_hf_config(root, path) ? parse_hf_config(root) : parse_model(root);
}

void emit_model(YAML::Emitter& out, const Model& model) {
  out << YAML::BeginMap;
  emit_text_field(out, "name", model.name);
  emit_text_field(out, "family", model.family);
  if (model.family != "listed") {
    emit_number_field(out, "layers", model.num_layers);
    emit_number_field(out, "hidden", model.hidden);
    emit_number_field(out, "heads", model.heads);
    if (model.head_dim > 0) emit_number_field(out, "head_dim", model.head_dim);
    emit_number_field(out, "ffn_hidden", model.ffn_hidden);
    if (model.kv_heads > 0) emit_number_field(out, "kv_heads", model.kv_heads);
    if (model.tie_embeddings) out << YAML::Key << "tie_embeddings" << YAML::Value << true;
    if (model.qkv_bias) out << YAML::Key << "qkv_bias" << YAML::Value << true;
    if (model.rope_theta > 0) emit_number_field(out, "rope_theta", model.rope_theta);
    if (model.attention_dropout) emit_number_field(out, "attention_dropout", *model.attention_dropout);
    if (model.hidden_dropout) emit_number_field(out, "hidden_dropout", *model.hidden_dropout);
    emit_number_field(out, "vocabulary", model.vocabulary);
    if (model.moe) emit_moe(out, *model.moe);
  } else if (model.heads > 0) {
    emit_number_field(out, "heads", model.heads);
  }
  if (model.sequence > 0) emit_number_field(out, "sequence", model.sequence);
  out << YAML::Key << "training" << YAML::Value << YAML::Flow << YAML::BeginMap;
  emit_number_field(out, "global_batch", model.training.global_batch);
  emit_text_field(out, "precision", to_string(model.training.precision));
  emit_text_field(out, "optimizer", model.training.optimizer);
  emit_framework_precision(out, model.training.framework_precision, FrameworkPrecision{});
  out << YAML::EndMap;
  if (model.family == "listed") {
    out << YAML::Key << "layer_list" << YAML::Value << YAML::BeginSeq;
    for (const Layer& layer : model.layers) {
      out << YAML::BeginMap;
      emit_text_field(out, "name", layer.name);
      emit_text_field(out, "kind", to_string(layer.kind));
      for (const LayerNumber& number : kLayerNumbers) emit_number_field(out, number.key, layer.*number.field);
      out << YAML::Key << "gemms" << YAML::Value << YAML::BeginSeq;
      for (const GemmOp& g : layer.gemms) {
        out << YAML::Flow << YAML::BeginMap;
        emit_text_field(out, "name", g.name);
        emit_number_field(out, "m", g.m);
        emit_number_field(out, "n", g.n);
        emit_number_field(out, "k", g.k);
        emit_number_field(out, "count", g.count);
        out << YAML::Key << "tp_split" << YAML::Value << g.tp_split << YAML::EndMap;
      }
      out << YAML::EndSeq << YAML::Key << "memory_ops" << YAML::Value << YAML::BeginSeq;
      for (const MemoryOp& op : layer.memory_ops) {
        out << YAML::Flow << YAML::BeginMap;
        emit_text_field(out, "name", op.name);
        emit_number_field(out, "bytes", op.bytes);
        out << YAML::Key << "tp_split" << YAML::Value << op.tp_split << YAML::EndMap;
      }
      out << YAML::EndSeq << YAML::EndMap;
    }
    out << YAML::EndSeq;
  }
  out << YAML::EndMap;
}

void save_model(const Model& model, const std::string& path) {
  YAML::Emitter out;
  emit_model(out, model);
  write_file_atomically(path, std::string(out.c_str()) + "\n");
}

}  // namespace whale::plan

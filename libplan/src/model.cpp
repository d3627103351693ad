// File: model.cpp
// Layer and Model totals, and generate_layers' dispatch to the family builders.
#include "whale/plan/model.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "model_families.h"
#include "whale/plan/error.h"
#include "whale/plan/limits.h"

namespace whale::plan {
namespace {
const char* const kLayerKinds[] = {"embedding", "transformer", "head", "custom"};
}  // namespace

const char* to_string(LayerKind kind) { return kLayerKinds[static_cast<int>(kind)]; }

bool parse_layer_kind(const std::string& name, LayerKind* kind) {
  for (int i = 0; i < 4; ++i) {
    if (name == kLayerKinds[i]) {
      *kind = static_cast<LayerKind>(i);
      return true;
    }
  }
  return false;
}

bool is_attention_core(const std::string& op_name) {
  for (const char* part : {"score", "softmax", "attention_dropout", "attn_dropout", "context"}) {
    if (op_name.find(part) != std::string::npos) return true;
  }
  return false;
}

Bytes weight_pass_bytes(const Layer& layer, int tp, Precision precision) {
  double elements = 0;
  for (const GemmOp& gemm : layer.gemms) {
    if (is_attention_core(gemm.name)) continue;
    const double input = gemm.m * gemm.k * gemm.count;
    const double output_gradient = gemm.m * gemm.n * gemm.count;
    const int split = gemm.tp_split ? tp : 1;
    elements += std::min(input, output_gradient) + std::max(input, output_gradient) / split;
  }
  return elements * bytes_per_element(precision);
}

Flops Layer::forward_flops() const {
  Flops total = 0;
  for (const GemmOp& gemm : gemms) total += 2.0 * gemm.m * gemm.n * gemm.k * gemm.count;
  return total;
}

Bytes Layer::activation_bytes(int tp) const {
  return activation_bytes_replicated + (activation_bytes_split + activation_bytes_attention) / tp;
}

Flops Model::forward_flops_per_sample() const {
  Flops total = 0;
  for (const Layer& layer : layers) total += layer.forward_flops();
  return total;
}

double Model::parameter_count() const {
  double total = 0;
  for (const Layer& layer : layers) total += layer.parameters;
  return total;
}

int Model::attention_head_dim() const {
  if (head_dim > 0) return head_dim;
  return heads > 0 ? hidden / heads : 0;
}

void set_sequence(Model& model, int sequence, Precision precision, const std::string& option) {
  if (model.family == "listed") {
    throw Error("", option, "a family model, got the listed model '" + model.name + "'", "a listed model's layers fix their own sequence");
  }
  if (sequence < 1 || sequence > kMaxModelDimension) {
    throw Error("", option, "a sequence in [1, " + std::to_string(kMaxModelDimension) + "] tokens, got " + std::to_string(sequence));
  }
  if (model.sliding_window > 0 && sequence > model.sliding_window) {
    throw Error("", option,
                "a sequence of at most the sliding window of '" + model.name + "' (" +
                    std::to_string(model.sliding_window) + " tokens), got " + std::to_string(sequence),
                "sliding-window attention at longer sequences changes the attention compute, which whale does not "
                "model; train at " + std::to_string(model.sliding_window) + " tokens or fewer");
  }
  model.sequence = sequence;
  if (model.training.global_batch_tokens > 0) model.training.global_batch = batch_of_tokens(model.training.global_batch_tokens, sequence);
  generate_layers(model, precision);
}

bool tp_splits_layers(const Model& model, int tp) { return tp_split_failure(model, tp).empty(); }

std::string tp_split_failure(const Model& model, int tp) {
  const std::pair<int, const char*> widths[] = {
      {model.heads, "heads"}, {model.kv_heads, "kv_heads"}, {model.ffn_hidden, "ffn_hidden"}};
  for (const auto& [width, name] : widths) {
    if (width > 0 && width % tp != 0) {
      return "tp " + std::to_string(tp) + " does not divide the model's " + std::to_string(width) + " " + name;
    }
  }
  if (model.vocabulary > 0 && tp > model.vocabulary) {
    return "tp " + std::to_string(tp) + " exceeds the model's vocabulary of " + std::to_string(model.vocabulary) +
           " tokens";
  }
  return "";
}

int batch_of_tokens(int tokens, int sequence) {
  return std::max(1, static_cast<int>(std::lround(static_cast<double>(tokens) / sequence)));
}

void generate_layers(Model& model, Precision precision) {
  const TransformerDims dims = transformer_dims(model, precision);
  model.layers.clear();
  if (model.family == "gpt" || model.family == "bert" || model.family == "llama") {
    model.layers.push_back(embedding_layer(model.family, dims));
    for (int i = 0; i < model.num_layers; ++i) {
      model.layers.push_back(model.family == "llama" ? llama_block(dims, i) : gpt_block(dims, i));
    }
    model.layers.push_back(head_layer(model.family, dims));
    return;
  }
  throw Error(model.source_file, "family", "cannot generate layers of family '" + model.family + "'",
              "families with generated layers: gpt, bert, llama");
}

// Family defaults (Model::attention_dropout): 0.1 for gpt and bert, none for llama.
static double family_dropout(const Model& model) { return model.family == "llama" ? 0.0 : 0.1; }

double attention_dropout_of(const Model& model) {
  return model.attention_dropout.value_or(family_dropout(model));
}

double hidden_dropout_of(const Model& model) { return model.hidden_dropout.value_or(family_dropout(model)); }

}  // namespace whale::plan

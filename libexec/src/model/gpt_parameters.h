// File: gpt_parameters.h
// Private: the GPT's dimensions, the parameters of each layer (name, full shape, how tensor
// parallelism splits it, how it is initialised) and the deterministic initialiser.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "whale/exec/model/tensor_shard.h"
#include "whale/plan/model.h"

namespace whale::exec::gpt {

/// Hyperparameters of a gpt-family model, validated by gpt_dims (throws whale::Error).
struct Dims {
  int layers = 0;    // transformer blocks L
  int channels = 0;  // C
  int heads = 0;     // NH
  int ffn = 0;       // F (4C unless the model says otherwise)
  int sequence = 0;  // T
  int vocabulary = 0;
  std::optional<plan::MoeSpec> moe;  // the model's experts (moe_layer.h); unset when dense
  int head_size() const { return channels / heads; }
};
Dims gpt_dims(const plan::Model& model);
/// The checks every transformer family shares: positive num_layers, hidden, heads, sequence and
/// vocabulary, and heads dividing hidden (throws whale::Error naming the field).
void require_transformer_dims(const plan::Model& model);

/// How tensor parallelism splits a parameter across the tp ranks (Megatron):
/// rows: rank r holds row block r (column-parallel weight (F, C), and its bias);
/// cols: rank r holds column block r (row-parallel weight (C, F));
/// qkv_rows: row block r of each of the Q, K and V thirds (by heads);
/// part_rows: row block r of each of the consecutive row parts `parts` (grouped-query qkv);
/// vocabulary_rows: the rows vocabulary_shard gives rank r (the token table and the LM head,
/// vocabulary-parallel; vocabulary_parallel.h), which need not divide evenly.
enum class Split { none, rows, cols, qkv_rows, part_rows, vocabulary_rows };
enum class Init { zeros, ones, normal };

struct ParameterSpec {
  std::string name;
  std::size_t rows = 0, cols = 1;  // the FULL tensor
  Split split = Split::none;
  Init init = Init::zeros;
  double stddev = 0.0;  // for Init::normal
  std::vector<std::size_t> parts;  // for Split::part_rows: row extents, summing to rows
  int expert = -1;  // a routed expert's parameter: that expert's index; -1 for every other
  bool trained = true;  // false: state the optimizer leaves alone (sigmoid_bias's router bias)
};

/// The parameters of model layer `layer` (0 = embedding, 1..L = blocks, L+1 = head), in
/// StageModule::parameters() order. Block b = layer-1 is named "layers.b.".
std::vector<ParameterSpec> layer_parameters(const Dims& dims, int layer);

TensorShard shard_layout(const ParameterSpec& spec, int tp_rank, int tp_size);

/// The layout of the parameter `name` among layer_parameters(dims, 0..dims.layers + 1) of a
/// family; throws std::invalid_argument naming `family` when it has none of that name.
template <class FamilyDims, class LayerParameters>
TensorShard find_shard_layout(const FamilyDims& dims, LayerParameters layer_parameters,
                              const std::string& name, int tp_rank, int tp_size,
                              const std::string& family) {
  for (int layer = 0; layer <= dims.layers + 1; ++layer)
    for (const ParameterSpec& spec : layer_parameters(dims, layer))
      if (spec.name == name) return shard_layout(spec, tp_rank, tp_size);
  throw std::invalid_argument("parameter_shard: no " + family + " parameter named '" + name + "'");
}

/// Fills full (spec.rows*spec.cols) with the initial values: element e of a normal parameter is
/// stddev * N(0,1) drawn by a counter-based hash of (seed, name, e); zeros and ones are constant.
/// Up to `threads` threads (at least 1, at most one per million elements) fill contiguous ranges;
/// the values do not depend on the thread count.
void initialize_full(const ParameterSpec& spec, uint64_t seed, float* full, int threads = 1);

}  // namespace whale::exec::gpt

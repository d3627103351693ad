// File: gpt_parameters.cpp
// The GPT's parameter list per layer, its tensor-parallel layouts and the validation of the
// family hyperparameters.
#include "model/gpt_parameters.h"

#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "model/moe_parameters.h"
#include "model/vocabulary_parallel.h"
#include "whale/plan/error.h"

namespace whale::exec::gpt {
namespace {

void require_positive(const plan::Model& model, const char* field, int value) {
  if (value <= 0)
    throw Error(model.source_file, field, "a positive integer, got " + std::to_string(value));
}

}  // namespace

void require_transformer_dims(const plan::Model& model) {
  require_positive(model, "num_layers", model.num_layers);
  require_positive(model, "hidden", model.hidden);
  require_positive(model, "heads", model.heads);
  require_positive(model, "sequence", model.sequence);
  require_positive(model, "vocabulary", model.vocabulary);
  // The runtime's blocks run attention at width hidden (head size hidden / heads); a wider or
  // narrower head_dim is planned and simulated only.
  if (model.head_dim > 0 && int64_t{model.head_dim} * model.heads != model.hidden)
    throw Error(model.source_file, "head_dim",
                "heads x head_dim equal to hidden " + std::to_string(model.hidden) + " for whale-run, got " +
                    std::to_string(model.heads) + " x " + std::to_string(model.head_dim),
                "whale-plan and whale-sim model this attention width; whale-run trains head_dim = hidden / heads only");
  if (model.hidden % model.heads != 0)
    throw Error(model.source_file, "heads",
                "a divisor of hidden " + std::to_string(model.hidden) + ", got " +
                    std::to_string(model.heads));
}

Dims gpt_dims(const plan::Model& model) {
  if (model.family != "gpt")
    throw Error(model.source_file, "family",
                "a gpt-family model for the runtime, got '" + model.family + "'",
                "whale-run trains family: gpt");
  require_transformer_dims(model);
  Dims d;
  d.layers = model.num_layers;
  d.channels = model.hidden;
  d.heads = model.heads;
  d.ffn = model.ffn_hidden > 0 ? model.ffn_hidden : 4 * model.hidden;
  d.sequence = model.sequence;
  d.vocabulary = model.vocabulary;
  validate_moe(model);
  d.moe = model.moe;
  return d;
}

std::vector<ParameterSpec> layer_parameters(const Dims& d, int layer) {
  const std::size_t C = d.channels, F = d.ffn, V = d.vocabulary, T = d.sequence;
  const double stddev = 0.02;
  const double residual_stddev = stddev / std::sqrt(2.0 * d.layers);  // GPT-2's scaled init
  auto norm = [](const std::string& prefix, std::size_t n) {
    return std::vector<ParameterSpec>{{prefix + ".weight", n, 1, Split::none, Init::ones, 0.0, {}},
                                      {prefix + ".bias", n, 1, Split::none, Init::zeros, 0.0, {}}};
  };
  std::vector<ParameterSpec> specs;
  if (layer == 0) {
    specs.push_back({"embedding.wte", V, C, Split::vocabulary_rows, Init::normal, stddev, {}});
    specs.push_back({"embedding.wpe", T, C, Split::none, Init::normal, stddev, {}});
  } else if (layer <= d.layers) {
    const std::string p = "layers." + std::to_string(layer - 1) + ".";
    for (auto& s : norm(p + "ln1", C)) specs.push_back(s);
    specs.push_back({p + "attn.qkv.weight", 3 * C, C, Split::qkv_rows, Init::normal, stddev, {}});
    specs.push_back({p + "attn.qkv.bias", 3 * C, 1, Split::qkv_rows, Init::zeros, 0.0, {}});
    specs.push_back({p + "attn.proj.weight", C, C, Split::cols, Init::normal, residual_stddev, {}});
    specs.push_back({p + "attn.proj.bias", C, 1, Split::none, Init::zeros, 0.0, {}});
    for (auto& s : norm(p + "ln2", C)) specs.push_back(s);
    if (d.moe && d.moe->is_moe_block(layer - 1)) {
      for (auto& s : moe_parameters(p, *d.moe, ExpertKind::gelu, C, stddev, residual_stddev))
        specs.push_back(s);
      return specs;
    }
    specs.push_back({p + "mlp.fc1.weight", F, C, Split::rows, Init::normal, stddev, {}});
    specs.push_back({p + "mlp.fc1.bias", F, 1, Split::rows, Init::zeros, 0.0, {}});
    specs.push_back({p + "mlp.fc2.weight", C, F, Split::cols, Init::normal, residual_stddev, {}});
    specs.push_back({p + "mlp.fc2.bias", C, 1, Split::none, Init::zeros, 0.0, {}});
  } else if (layer == d.layers + 1) {
    for (auto& s : norm("head.ln", C)) specs.push_back(s);
    specs.push_back({"head.weight", V, C, Split::vocabulary_rows, Init::normal, stddev, {}});
  } else {
    throw std::invalid_argument("gpt layer " + std::to_string(layer) + " outside 0.." +
                                std::to_string(d.layers + 1));
  }
  return specs;
}

TensorShard shard_layout(const ParameterSpec& spec, int tp_rank, int tp_size) {
  TensorShard layout;
  layout.rows = spec.rows;
  layout.cols = spec.cols;
  const auto block = [&](std::size_t extent, std::size_t base) {
    const std::size_t size = extent / tp_size;
    return std::make_pair(base + size * tp_rank, base + size * (tp_rank + 1));
  };
  switch (spec.split) {
    case Split::none:
      break;
    case Split::rows:
      layout.ranges.push_back(block(spec.rows, 0));
      break;
    case Split::cols:
      layout.split_dim = 1;
      layout.ranges.push_back(block(spec.cols, 0));
      break;
    case Split::qkv_rows:
      for (std::size_t part = 0; part < 3; ++part)
        layout.ranges.push_back(block(spec.rows / 3, part * (spec.rows / 3)));
      break;
    case Split::part_rows: {
      std::size_t base = 0;
      for (std::size_t extent : spec.parts) {
        layout.ranges.push_back(block(extent, base));
        base += extent;
      }
      break;
    }
    case Split::vocabulary_rows: {
      const VocabularyShard shard = vocabulary_shard(static_cast<int>(spec.rows), tp_rank, tp_size);
      layout.ranges.emplace_back(shard.first, shard.first + shard.count);
      break;
    }
  }
  return layout;
}

TensorShard gpt_parameter_shard(const plan::Model& model, const std::string& name, int tp_rank,
                                int tp_size) {
  return find_shard_layout(gpt_dims(model), layer_parameters, name, tp_rank, tp_size, "GPT");
}

}  // namespace whale::exec::gpt

namespace whale::exec {
TensorShard gpt_parameter_shard(const plan::Model& model, const std::string& name, int tp_rank,
                                int tp_size) {
  return gpt::gpt_parameter_shard(model, name, tp_rank, tp_size);
}
}  // namespace whale::exec

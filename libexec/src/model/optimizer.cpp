// File: optimizer.cpp
// The optimizer of a model's training.optimizer.
#include "whale/exec/model/optimizer.h"

#include <stdexcept>

namespace whale::exec {

OptimizerConfig::Kind optimizer_kind(const std::string& training_optimizer) {
  if (training_optimizer == "adamw" || training_optimizer == "adam") return OptimizerConfig::Kind::adamw;
  if (training_optimizer == "sgd") return OptimizerConfig::Kind::sgd;
  throw std::invalid_argument("unknown optimizer '" + training_optimizer + "' (known: adamw, adam, sgd)");
}

std::unique_ptr<SlicedOptimizer> make_optimizer(Backend& backend, std::vector<ParameterView> params,
                                                const OptimizerConfig& config, std::size_t begin,
                                                std::size_t end) {
  if (config.kind == OptimizerConfig::Kind::sgd)
    return std::make_unique<Sgd>(backend, std::move(params), config.sgd, begin, end);
  return std::make_unique<AdamW>(backend, std::move(params), config.adamw, begin, end);
}

}  // namespace whale::exec

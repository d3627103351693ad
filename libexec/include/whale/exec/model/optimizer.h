// File: optimizer.h
// The optimizer a model trains with (its training.optimizer: adamw or adam, AdamW without
// weight decay being Adam's update; sgd, SGD with momentum), as a SlicedOptimizer.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "whale/exec/model/adamw.h"
#include "whale/exec/model/sgd.h"

namespace whale::exec {

struct OptimizerConfig {
  enum class Kind { adamw, sgd };
  Kind kind = Kind::adamw;
  AdamWConfig adamw;  // read under adamw
  SgdConfig sgd;      // read under sgd
};

/// The kind of a model's training.optimizer ("adamw", "adam" or "sgd", as model_yaml.cpp
/// accepts). Throws std::invalid_argument for any other name.
OptimizerConfig::Kind optimizer_kind(const std::string& training_optimizer);

/// The optimizer of `config`'s kind over elements [begin, end) of `params` (sliced_optimizer.h).
std::unique_ptr<SlicedOptimizer> make_optimizer(Backend& backend, std::vector<ParameterView> params,
                                                const OptimizerConfig& config, std::size_t begin = 0,
                                                std::size_t end = static_cast<std::size_t>(-1));

}  // namespace whale::exec

// File: model_state_bytes.cpp
// state_bytes_per_param: the model state's bytes per parameter; held_optimizer_bytes_per_param:
// the optimizer's bytes with the framework's fp32 gradient copy.
#include "whale/plan/model_state_bytes.h"

#include "whale/plan/error.h"

namespace whale::plan {

StateBytesPerParam state_bytes_per_param(Precision precision, const std::string& optimizer,
                                         const FrameworkPrecision& framework) {
  int states = 0;
  if (optimizer == "adam" || optimizer == "adamw") {
    states = 2;  // m and v
  } else if (optimizer == "sgd") {
    states = 1;  // momentum
  } else {
    throw Error("", "training.optimizer", "a known optimizer, got '" + optimizer + "'",
                "use adam, adamw or sgd");
  }
  const bool mixed = precision == Precision::fp16 || precision == Precision::bf16;
  StateBytesPerParam out;
  out.weights = bytes_per_element(precision);
  out.gradients = gradient_bytes_per_element(precision, framework);
  // fp32 optimizer states, plus fp32 master weights under mixed precision unless there are none.
  const bool master = mixed && framework.master_weights == MasterWeights::fp32;
  out.master_weights = master ? 4.0 : 0.0;
  out.optimizer = 4.0 * states + out.master_weights;
  return out;
}

double held_optimizer_bytes_per_param(const StateBytesPerParam& state, const FrameworkMemory& framework) {
  return state.optimizer + (framework.fp32_gradient_copy && state.gradients < 4 ? 4.0 : 0.0);
}

double unsharded_optimizer_bytes_per_param(const StateBytesPerParam& state, const FrameworkMemory& framework) {
  return framework.master_weights_held_whole ? state.master_weights : 0.0;
}

double optimizer_bytes_per_param(double held, double unsharded, double shards) {
  return (held - unsharded) / shards + unsharded;
}

}  // namespace whale::plan

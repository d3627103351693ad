// File: moe.cpp
// The router's and the dispatcher's names as files write them, and the rules of a valid MoeSpec (moe.h).
#include "whale/plan/moe.h"

#include <cstdio>

namespace whale::plan {

const char* to_string(MoeRouter router) {
  switch (router) {
    case MoeRouter::softmax_topk: return "softmax_topk";
    case MoeRouter::sigmoid_bias: return "sigmoid_bias";
  }
  return "softmax_topk";
}

bool parse_moe_router(const std::string& name, MoeRouter* router) {
  for (MoeRouter r : {MoeRouter::softmax_topk, MoeRouter::sigmoid_bias}) {
    if (name == to_string(r)) {
      *router = r;
      return true;
    }
  }
  return false;
}

const char* to_string(MoeDispatcher dispatcher) {
  switch (dispatcher) {
    case MoeDispatcher::alltoall: return "alltoall";
    case MoeDispatcher::deepep: return "deepep";
  }
  return "alltoall";
}

bool parse_moe_dispatcher(const std::string& name, MoeDispatcher* dispatcher) {
  for (MoeDispatcher d : {MoeDispatcher::alltoall, MoeDispatcher::deepep}) {
    if (name == to_string(d)) {
      *dispatcher = d;
      return true;
    }
  }
  return false;
}

namespace {
std::string number_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}
}  // namespace

std::optional<MoeProblem> find_moe_problem(const MoeSpec& spec, int blocks) {
  if (spec.experts < 2) {
    return MoeProblem{"experts", "expected at least 2 experts, got " + std::to_string(spec.experts),
                      "a block of one expert is a dense MLP: leave out moe"};
  }
  if (spec.top_k < 1) return MoeProblem{"top_k", "expected top_k >= 1, got " + std::to_string(spec.top_k), "Mixtral routes each token to 2 experts"};
  if (spec.top_k > spec.experts) {
    return MoeProblem{"top_k", "top_k " + std::to_string(spec.top_k) + " is above the " + std::to_string(spec.experts) + " experts",
                      "a token passes through at most every expert"};
  }
  if (spec.shared_experts < 0) return MoeProblem{"shared_experts", "expected shared_experts >= 0, got " + std::to_string(spec.shared_experts), "0: no shared expert"};
  if (spec.expert_ffn_hidden < 1) {
    return MoeProblem{"expert_ffn_hidden", "expected a positive expert_ffn_hidden, got " + std::to_string(spec.expert_ffn_hidden),
                      "leave it out for the model's ffn_hidden"};
  }
  if (!(spec.capacity_factor >= 0)) {
    return MoeProblem{"capacity_factor", "expected capacity_factor >= 0, got " + number_text(spec.capacity_factor), "0 or absent: dropless"};
  }
  if (!(spec.aux_loss_coeff >= 0)) {
    return MoeProblem{"aux_loss_coeff", "expected aux_loss_coeff >= 0, got " + number_text(spec.aux_loss_coeff), "Mixtral uses 0.02, 0: no auxiliary loss"};
  }
  if (!(spec.bias_update_rate >= 0)) {
    return MoeProblem{"bias_update_rate", "expected bias_update_rate >= 0, got " + number_text(spec.bias_update_rate),
                      "DeepSeek-V3 uses 0.001; 0 keeps the sigmoid_bias router's bias at zero"};
  }
  if (spec.first_dense_layers < 0 || spec.first_dense_layers >= blocks) {
    return MoeProblem{"first_dense_layers",
                      "expected first_dense_layers in [0, " + std::to_string(blocks) + "), got " + std::to_string(spec.first_dense_layers),
                      "at least one of the model's " + std::to_string(blocks) + " blocks must be MoE"};
  }
  if (spec.layer_interval < 1) {
    return MoeProblem{"layer_interval", "expected layer_interval >= 1, got " + std::to_string(spec.layer_interval), "1: every block is MoE, 2: every other"};
  }
  const double most = static_cast<double>(spec.experts) / spec.top_k;
  if (!(spec.load_imbalance >= 1 && spec.load_imbalance <= most)) {
    return MoeProblem{"load_imbalance",
                      "expected load_imbalance in [1, experts / top_k = " + number_text(most) + "], got " + number_text(spec.load_imbalance),
                      "the busiest expert's tokens over the mean: 1 is perfect balance, experts / top_k every token"};
  }
  return std::nullopt;
}

}  // namespace whale::plan

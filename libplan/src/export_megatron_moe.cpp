// File: export_megatron_moe.cpp
// Megatron-Core's mixture-of-experts arguments of a plan (docs/moe.md, docs/export.md): the
// experts, the router, the layer pattern and stage 0's expert layout.
#include <sstream>

#include "export_layout.h"
#include "yaml_writer.h"

namespace whale::plan {

std::vector<std::pair<std::string, std::string>> megatron_moe_arguments(const Plan& plan) {
  std::vector<std::pair<std::string, std::string>> args;
  if (!plan.model.moe) return args;
  const MoeSpec& moe = *plan.model.moe;
  const Stage& stage = plan.stages.front();
  args.push_back({"--num-experts", std::to_string(moe.experts)});
  args.push_back({"--moe-router-topk", std::to_string(moe.top_k)});
  args.push_back({"--moe-ffn-hidden-size", std::to_string(moe.expert_ffn_hidden)});
  args.push_back({"--expert-model-parallel-size", std::to_string(stage.ep)});
  args.push_back({"--expert-tensor-parallel-size", std::to_string(stage.expert_tp_degree())});
  args.push_back({"--moe-grouped-gemm", ""});
  if (plan.moe_dispatcher == MoeDispatcher::deepep) {
    // Megatron-Core's flex dispatcher with the DeepEP backend, as Megatron-MoE-ModelZoo's
    // sbatch_benchmarking.sh asks for it (DISPATCHER=deepep); Megatron-LM before the backend
    // option took --moe-enable-deepep instead.
    args.push_back({"--moe-token-dispatcher-type", "flex"});
    args.push_back({"--moe-flex-dispatcher-backend", "deepep"});
  } else {
    args.push_back({"--moe-token-dispatcher-type", "alltoall"});
  }
  if (moe.shared_experts > 0) {
    args.push_back({"--moe-shared-expert-intermediate-size", std::to_string(moe.shared_experts * moe.expert_ffn_hidden)});
  }
  if (moe.router == MoeRouter::sigmoid_bias) {
    args.push_back({"--moe-router-score-function", "sigmoid"});
    args.push_back({"--moe-router-enable-expert-bias", ""});
    args.push_back({"--moe-router-bias-update-rate", format_number(moe.bias_update_rate)});
  }
  if (moe.aux_loss_coeff > 0) {
    args.push_back({"--moe-router-load-balancing-type", "aux_loss"});
    args.push_back({"--moe-aux-loss-coeff", format_number(moe.aux_loss_coeff)});
  } else {
    args.push_back({"--moe-router-load-balancing-type", "none"});
  }
  if (moe.capacity_factor > 0) args.push_back({"--moe-expert-capacity-factor", format_number(moe.capacity_factor)});
  if (moe.first_dense_layers > 0 || moe.layer_interval > 1) {
    // Megatron-Core's --moe-layer-freq takes the pattern as a Python list, 1 for an MoE block.
    std::ostringstream pattern;
    pattern << "\"[";
    for (int b = 0; b < plan.model.num_layers; ++b) pattern << (b ? "," : "") << (moe.is_moe_block(b) ? 1 : 0);
    pattern << "]\"";
    args.push_back({"--moe-layer-freq", pattern.str()});
  }
  return args;
}

}  // namespace whale::plan

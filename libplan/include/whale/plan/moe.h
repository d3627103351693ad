// File: moe.h
// MoeSpec: the mixture-of-experts part of a model (Mixtral, Qwen2/Qwen3-MoE, OLMoE, DeepSeek):
// which transformer blocks replace their MLP by routed experts, how many, how tokens are routed,
// and what the router's load balancing costs. The model file, the simulator, the planner and
// whale-run read the same fields.
#pragma once

#include <optional>
#include <string>

namespace whale::plan {

/// How a token picks its experts.
/// softmax_topk: the top-k router logits, their softmax as the gate weights (Mixtral; Qwen-MoE
///               with norm_topk_prob), with the Switch Transformer's auxiliary loss.
/// sigmoid_bias: sigmoid scores plus a per-expert bias that only steers the choice, the chosen
///               scores normalized as the gates (DeepSeek-V3's auxiliary-loss-free balancing).
enum class MoeRouter { softmax_topk, sigmoid_bias };
/// "softmax_topk" or "sigmoid_bias".
const char* to_string(MoeRouter router);
/// Reads a router's name into `router`; false (and `router` unchanged) for an unknown name.
bool parse_moe_router(const std::string& name, MoeRouter* router);

/// How a plan's MoE layers exchange tokens among an ep group (Megatron-Core's
/// --moe-token-dispatcher-type; docs/moe.md, "Dispatchers"). The math is the same; the bytes
/// differ.
/// alltoall: NCCL all-to-alls of every (token, expert) copy (Megatron's alltoall dispatcher).
/// deepep:   DeepEP's normal kernels (Megatron's flex dispatcher, --moe-flex-dispatcher-backend
///           deepep): one copy per (token, destination node) over the network, forwarded over
///           NVLink to each destination rank there; one copy per (token, rank) inside a node.
enum class MoeDispatcher { alltoall, deepep };
/// "alltoall" or "deepep".
const char* to_string(MoeDispatcher dispatcher);
/// Reads a dispatcher's name into `dispatcher`; false (and it unchanged) for an unknown name.
bool parse_moe_dispatcher(const std::string& name, MoeDispatcher* dispatcher);

struct MoeSpec {
  int experts = 0;             // routed experts in each MoE block
  int top_k = 0;               // routed experts each token passes through
  int shared_experts = 0;      // experts every token passes through as well (0: none)
  int expert_ffn_hidden = 0;   // the FFN width of each expert, routed and shared
  /// Tokens an expert takes in a micro-batch: ceil(capacity_factor * tokens * top_k / experts);
  /// the rest are dropped (they skip the expert, the residual carries them). 0: dropless.
  double capacity_factor = 0;
  MoeRouter router = MoeRouter::softmax_topk;
  double aux_loss_coeff = 0;   // weight of the load-balancing loss (0: none)
  /// sigmoid_bias: what each step adds to or takes from an expert's bias, u in DeepSeek-V3's
  /// auxiliary-loss-free balancing (bias_e += u * sign(mean load - load_e)). 0.001: the
  /// DeepSeek-V3 technical report (arXiv 2412.19437, section 4.2, "bias update speed").
  double bias_update_rate = 0.001;
  int first_dense_layers = 0;  // the first blocks keep a dense MLP (DeepSeek-V3: 3)
  int layer_interval = 1;      // after those, every layer_interval-th block is MoE (1: all)
  /// Tokens of the busiest expert over the mean, in a step of training (>= 1): scales the
  /// routed experts' compute and the all-to-all's receiving side in the simulator.
  double load_imbalance = 1.0;

  /// Whether transformer block `block` (0-based, blocks only) has routed experts.
  bool is_moe_block(int block) const {
    return block >= first_dense_layers && (block - first_dense_layers) % layer_interval == 0;
  }
};

/// A rule that a MoeSpec breaks: the field (as the model YAML names it under `moe:`), what was
/// expected, and a hint.
struct MoeProblem {
  std::string field;
  std::string expected;
  std::string hint;
};
/// The first rule `spec` breaks for a model of `blocks` transformer blocks, or nothing when it is
/// valid: experts >= 2, 1 <= top_k <= experts, shared_experts >= 0, expert_ffn_hidden >= 1,
/// capacity_factor >= 0, aux_loss_coeff >= 0, bias_update_rate >= 0, 0 <= first_dense_layers < blocks,
/// layer_interval >= 1, 1 <= load_imbalance <= experts / top_k (the busiest expert cannot take
/// more than every token). The model YAML and the Hugging Face reader both report it.
std::optional<MoeProblem> find_moe_problem(const MoeSpec& spec, int blocks);

}  // namespace whale::plan

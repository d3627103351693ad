// File: moe_layer.h
// Private: the feed-forward part of a mixture-of-experts block (Mixtral, Switch Transformer):
// a router, each token's top_k routed experts (capacity dropping as moe_routing.h), shared
// experts every token passes through, the Switch Transformer's auxiliary loss, and expert
// parallelism (tokens exchanged with the expert-parallel group's members, moe_exchange.h), and
// expert tensor parallelism inside the block's tensor group (MoeContext::expert_tp_size), the
// folded layout included (MoeContext::token_slices), or across several tensor groups
// (MoeContext::expert_gather).
// Replaces the MLP of GPT and Llama blocks: input the normed residual stream (N, C), output
// sum_j gate_j * expert_j(x) + sum_s shared_s(x) (N, C), the residual added by the block.
#pragma once

#include <map>
#include <vector>

#include "model/moe_parameters.h"
#include "model/moe_routing.h"
#include "model/tensor_parallel_ops.h"
#include "whale/exec/backend/backend.h"
#include "whale/exec/comm/communicator.h"
#include "whale/plan/expert_ownership.h"
#include "whale/plan/moe.h"

namespace whale::exec {

/// One expert MLP: gelu uses w1 = fc1 (F, C), b1, w2 = fc2 (C, F), b2; swiglu uses
/// w1 = gate (F, C), w3 = up (F, C), w2 = down (C, F); the others are empty.
struct ExpertParams {
  Param w1, b1, w3, w2, b2;
};

struct MoeParams {
  Param router;                      // (E, C)
  Param router_bias;                 // (E) fp32, sigmoid_bias only: steers the choice, untrained
  std::vector<ExpertParams> shared;  // every shared expert
  std::vector<ExpertParams> routed;  // this member's routed experts, first_expert onwards
};

/// Reads MoeParams from a block's parameters in moe_parameters order, starting at `p[first]`,
/// holding `routed` routed experts; `router_bias`: the router's bias follows it (sigmoid_bias).
MoeParams moe_params(const std::vector<Param>& p, std::size_t first, ExpertKind kind,
                     int shared, int routed, bool router_bias = false);
/// The routed experts whose parameters a block holds, given its `moe_count` MoE parameters
/// (the router, its bias when `router_bias`, the shared experts and the held routed experts).
int routed_held(std::size_t moe_count, int shared, ExpertKind kind, bool router_bias = false);

/// How the block's stage holds the experts and what backward scales the auxiliary loss by.
/// One per stage, shared by its blocks; the stage sets loss_scale before each backward.
struct MoeContext {
  plan::MoeSpec spec;
  ExpertKind kind = ExpertKind::gelu;
  int ep_rank = 0, ep_size = 1;
  Communicator* ep = nullptr;  // null when ep_size is 1
  /// The block's tensor parallelism: each shared expert's FFN is this tp rank's 1 / tp_size of
  /// expert_ffn_hidden; every tp rank routes the tensor group's tokens alike, and the layer sums
  /// its partial outputs (and input gradients) over the block's tensor group.
  int tp_rank = 0, tp_size = 1;
  /// The routed experts' tensor parallelism: each routed expert's FFN is this rank's
  /// 1 / expert_tp_size of expert_ffn_hidden (shard expert_tp_rank). With expert_tp_size
  /// dividing tp_size, the tensor group's N tokens are split into tp_size / expert_tp_size
  /// slices (slice s: rows [s N / slices, (s + 1) N / slices)); this rank dispatches slice
  /// tp_rank / expert_tp_size alone (MoE parallel folding; one slice when expert_tp = tp).
  /// With expert_tp_size a multiple of tp_size, the expert-tp group spans expert_tp_size /
  /// tp_size tensor groups, each with its own tokens: `expert_gather` joins this rank with
  /// their members of its tp rank. They gather each other's received rows, run their shards
  /// over all of them and sum the partial outputs back to each row's member (Megatron's
  /// all-gather and reduce-scatter over the expert-tp group); the tensor group's sum then adds
  /// the other tp ranks' shards. Null otherwise.
  int expert_tp_size = 1;
  int expert_tp_rank = 0;
  Communicator* expert_gather = nullptr;
  int token_slices() const { return expert_tp_size < tp_size ? tp_size / expert_tp_size : 1; }
  int token_slice() const { return expert_tp_size < tp_size ? tp_rank / expert_tp_size : 0; }
  plan::ExpertOwnership owners;      // which member holds which routed experts
  double loss_scale = 1.0;     // the backward's (StageModule::backward)
  /// sigmoid_bias: the tokens each expert was chosen by (capacity drops included) in this step's
  /// backwards so far, per MoE layer, keyed by the data of its router bias (an fp32 master
  /// parameter); the stage sums them over dp and updates the biases after the optimizer step.
  mutable std::map<const void*, std::vector<double>> step_loads;
  /// Seconds the layers spent in the expert group's exchanges so far (counts included), so
  /// that layer timing leaves them out as it does the tensor group's collectives.
  mutable double exchange_s = 0;
  int local_experts() const { return owners.count(ep_rank); }
  int first_expert() const { return owners.first(ep_rank); }
};

/// The activations of one expert MLP over some rows: h1 (rows, F) before the activation (fc1
/// or gate), h3 (rows, F) the up projection (swiglu), act (rows, F) the activation.
struct ExpertActivations {
  Tensor h1, h3, act;
};

/// What backward needs of one MoE layer and one micro-batch. N tokens, E experts, K top_k,
/// M routed rows sent, R rows received (this member's experts' rows).
struct MoeActivations {
  Tensor logits;                      // (N, E) act
  Tensor probs, gates;                // (N, E), (N, K) fp32
  Tensor chosen;                      // (N, K) i32
  Tensor slot_rows, source_rows;      // (N, K), (M) i32
  MoeRoutingPlan routing;             // host copy of the plan
  std::vector<int> send_rows, recv_rows;  // per ep member
  /// The rows the experts run, as (local expert, rows) runs: the received rows, or with
  /// expert_gather those of every gather member in member order (gather_rows[j] of member j).
  std::vector<int> segment_expert, segment_rows;
  std::vector<int> gather_rows;
  Tensor expert_in, expert_out;       // (R, C) act
  Tensor gathered_in;                 // expert_gather: (sum of gather_rows, C) act
  ExpertActivations routed;           // (rows the experts run, F) each
  Tensor routed_out;                  // (M, C) act: the experts' outputs back at this member
  std::vector<ExpertActivations> shared;  // (N, F) each
};

/// Scratch shared by the MoE layers of a stage (they run one at a time).
struct MoeScratch {
  Tensor routed_in, d_routed, d_expert_out, d_expert_in, d_routed_in;  // (M or R, C)
  Tensor dh1, dh3, dact;               // (rows, F)
  /// expert_gather: the experts' partial outputs (or input gradients) over the gathered rows,
  /// each member's parts of this member's rows, and the gathered output gradient.
  Tensor partial, parts, d_gathered_out;
  Tensor shared_out, dshared;          // (N, C)
  Tensor dgates, dlogits, aux_dprobs;  // (N, K), (N, E), (E)
  /// Under sequence parallelism: the gathered input and output gradient, the output and input
  /// gradient over all rows, and the router's input gradient (N, C) each.
  Tensor x_all, dout_all, out_all, dx_all, router_dx;
};

class MoeLayer {
 public:
  /// context, scratch and what `ops` refers to (the region, and the WeightGradients that runs
  /// or defers the linears' weight gradients) must outlive the layer; `ops` is copied, so the
  /// layer may move with its block.
  MoeLayer(int channels, const MoeParams& params, Backend& backend, const MoeContext& context,
           MoeScratch& scratch, TensorParallelOps& ops);

  /// out = the layer of x over the tensor group's `rows` (N) rows, overwritten; fills acts.
  /// x and out hold this rank's rows of the block's region (tensor_parallel_region.h): all N,
  /// or N / tp under sequence parallelism, where the layer all-gathers x (every rank routes all
  /// N rows alike) and reduce-scatters its output.
  void forward(int rows, ConstTensorView x, TensorView out, MoeActivations& acts);
  /// dx = d loss / d x, overwritten, given dout (both held rows as x); accumulates the
  /// parameter gradients, the auxiliary loss's included (scaled by the context's loss_scale).
  void backward(int rows, ConstTensorView x, ConstTensorView dout, TensorView dx,
                const MoeActivations& acts);

 private:
  void route(int rows, ConstTensorView x, MoeActivations& a);
  /// One expert MLP of width `width` (this rank's shard) over `rows` rows from row `at`;
  /// `bias_owner`: this rank adds the row-parallel fc2's bias (and takes its gradient).
  void expert_forward(const ExpertParams& p, int width, bool bias_owner, ConstTensorView x,
                      int rows, ExpertActivations& a, std::size_t at, TensorView y);
  void expert_backward(const ExpertParams& p, int width, ConstTensorView x, int rows,
                       const ExpertActivations& a, std::size_t at, ConstTensorView dy,
                       TensorView dx);
  /// Sends `from` (rows grouped by destination, counts `send`) and receives into `to`, over
  /// `group` (null: the expert-parallel group).
  void exchange(ConstTensorView from, const std::vector<int>& send, TensorView to,
                const std::vector<int>& recv, Communicator* group = nullptr);
  /// expert_gather: `all` = every gather member's `mine` (its rows_of[j] rows), in member order.
  void gather(ConstTensorView mine, TensorView all, const std::vector<int>& rows_of);
  /// The experts' input rows: `mine` (this member's), or with expert_gather every gather
  /// member's, gathered into `all`.
  ConstTensorView rows_for_experts(ConstTensorView mine, Tensor& all, const MoeActivations& a);
  /// Where the experts write over those rows: `mine`, or with expert_gather the partial scratch
  /// that sum_partials sums back into this member's rows.
  TensorView experts_output(TensorView mine, const MoeActivations& a);
  /// expert_gather: `mine` (rows_of[me] rows) = the sum over the members of their `partial`
  /// rows of this member (partial holds every member's rows, as gather lays them out).
  void sum_partials(ConstTensorView partial, const std::vector<int>& rows_of, TensorView mine);

  int channels_;
  int routed_ffn_, shared_ffn_;  // this rank's width of a routed and of a shared expert
  MoeParams p_;
  Backend& be_;
  const MoeContext* context_;
  MoeScratch* scratch_;
  TensorParallelOps ops_;
  DType act_;
};

}  // namespace whale::exec

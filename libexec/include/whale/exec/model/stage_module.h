// File: stage_module.h
// StageModule: the layers [first_layer, end_layer) of a GPT- or Llama-family model as one tensor-parallel
// shard, with forward, backward (optionally recomputing), gradients and parameters.
// The executor drives it by the schedule program; it knows nothing of pipelines or dp.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "whale/exec/backend/tensor.h"
#include "whale/plan/model.h"
#include "whale/plan/plan.h"

namespace whale::exec {

class Backend;
class Communicator;

/// The tokens of the samples one replica processes in one micro-batch.
struct MicroBatchTokens {
  int64_t step = 0;                // the training step (dropout masks depend on it)
  int64_t first_sample = 0;        // the global batch's index of sample 0 (as the data loader
                                   // numbers them; every plan of a run numbers them alike)
  int samples = 0;                 // samples of this replica in this micro-batch
  std::vector<int32_t> inputs;     // [samples, sequence]
  std::vector<int32_t> targets;    // [samples, sequence]: inputs shifted by one
};

/// One parameter tensor (this shard's part): its fp32 master value and its fp32 gradient, both
/// in the stage's backend memory (read them with Backend::download).
struct ParameterView {
  std::string name;      // e.g. "layers.3.attn.qkv.weight"
  TensorView value;      // fp32 (count)
  TensorView gradient;   // fp32 (count)
  std::size_t count = 0;
  bool tp_replicated = false;  // identical on every tp rank (layernorm, row-parallel bias)
  int layer = 0;               // the model layer (plan::Model::layers index) it belongs to
  /// A routed expert's parameter under expert parallelism: held by one member of the expert-
  /// parallel group, its gradient summed over the expert-data-parallel group (the replicas
  /// holding the same experts) instead of the whole data-parallel group.
  bool expert_parallel = false;
  /// False for state that is no trained weight (a sigmoid_bias router's expert bias): AdamW
  /// leaves it alone, its gradient stays zero, the stage itself updates it (end_step); it is
  /// checkpointed and dumped as a parameter. Kept in fp32 whatever the compute dtype.
  bool trained = true;
  /// Weight decay applies: true for matrices, false for biases and norm weights (1-D), which
  /// Megatron-LM's parameter groups leave undecayed.
  bool decayed = true;
};

class StageModule {
 public:
  virtual ~StageModule() = default;

  /// Floats per sample of the activation entering first_layer ([sequence, hidden]);
  /// 0 when first_layer is the embedding (its input is tokens).
  virtual std::size_t input_floats_per_sample() const = 0;
  /// Floats per sample of the activation leaving end_layer-1; 0 for the head (it yields loss).
  virtual std::size_t output_floats_per_sample() const = 0;

  /// Forward of micro-batch `micro_batch`. `input` (host memory) holds tokens.samples * input
  /// floats (ignored for the embedding stage); `output` (host memory) receives tokens.samples *
  /// output floats. Activations cross stages as fp32 on the host; in a 16-bit compute dtype
  /// they are values of that dtype, so the round trip is exact. Returns the
  /// summed token cross-entropy of these samples when the stage holds the head, else 0.
  /// Keeps what backward needs (only the input under full recomputation).
  virtual double forward(int micro_batch, const MicroBatchTokens& tokens, const float* input,
                         float* output) = 0;
  /// Backward of micro-batch `micro_batch`; `output_gradient` is ignored for the head stage,
  /// whose loss gradient is scaled by `loss_scale` (1 / tokens in the global batch, so that the
  /// summed gradients equal single-device training). Writes the input gradient (ignored for the
  /// embedding stage) and ACCUMULATES parameter gradients. Frees the micro-batch's activations.
  virtual void backward(int micro_batch, const float* output_gradient, float* input_gradient,
                        double loss_scale) = 0;
  /// The input pass of a split backward (zb-h1's B): as backward, except that every linear
  /// layer's weight gradient (and bias gradient) is deferred to backward_weight, which keeps
  /// the linear's input and output gradient until then, and that no layer is reported done.
  /// Other parameter gradients (layernorm, embedding) are accumulated here.
  virtual void backward_input(int micro_batch, const float* output_gradient,
                              float* input_gradient, double loss_scale) = 0;
  /// The weight pass of a split backward (zb-h1's W), after the micro-batch's backward_input:
  /// accumulates the deferred weight gradients and reports every layer of the stage done,
  /// last layer first. The parameter gradients then hold the whole backward's contribution.
  virtual void backward_weight(int micro_batch) = 0;

  /// The parameters in layer order (a layer's parameters back to back); their gradients lie
  /// back to back in one fp32 tensor.
  virtual std::vector<ParameterView> parameters() = 0;
  virtual void zero_gradients() = 0;
  /// Call after every change of the fp32 master values (optimizer step, checkpoint load): casts
  /// them into the compute-dtype copy that forward and backward use (nothing under fp32).
  virtual void parameters_updated() = 0;
  /// Call once per step after the optimizer step, with the stage's data-parallel group (null
  /// for one replica): updates the untrained state from the whole step's statistics, the same
  /// on every replica (sigmoid_bias routers: each expert bias from the tokens routed in the
  /// step's backwards, summed over `dp`), and starts the next step's statistics.
  virtual void end_step(Communicator* dp) = 0;

  /// Called by backward (or backward_weight) each time it has finished the backward of one
  /// model layer (layers in descending order, each once per backward): that layer's parameter
  /// gradients of this micro-batch are accumulated and no later part of the same backward
  /// writes them. Lets
  /// the executor start gradient reductions and drive communication progress between layers.
  /// Null (the default) for none.
  using LayerDone = std::function<void(int layer)>;
  void set_layer_done(LayerDone callback) { layer_done_ = std::move(callback); }

  /// When set (whale-run --layer-times), forward and a whole backward synchronize the compute
  /// stream around each model layer and report its seconds, the tensor group's collectives
  /// excluded (and, in the backward, a full recomputation's forward). A split backward
  /// (backward_input, backward_weight) reports nothing. Null (the default): no timing.
  using LayerTimed = std::function<void(int layer, bool backward, double seconds)>;
  void set_layer_timed(LayerTimed callback) { layer_timed_ = std::move(callback); }

 protected:
  /// For implementations: reports layer `layer` finished to the callback, if any.
  void layer_backward_done(int layer) {
    if (layer_done_) layer_done_(layer);
  }
  /// For implementations: whether layer times are asked for, and the report of one.
  bool layer_timing() const { return static_cast<bool>(layer_timed_); }
  void report_layer_time(int layer, bool backward, double seconds) { layer_timed_(layer, backward, seconds); }

 private:
  LayerDone layer_done_;
  LayerTimed layer_timed_;
};

struct StageModuleOptions {
  int first_layer = 0;
  int end_layer = 0;
  int tp_rank = 0;
  int tp_size = 1;
  plan::Recompute recompute = plan::Recompute::none;
  /// Sequence parallelism: outside the tensor-parallel linears (layernorms, biases after them,
  /// residual stream) each tp rank holds 1/tp_size of the rows; needs tp_size dividing the
  /// sequence.
  bool sequence_parallel = false;
  /// Expert parallelism (a mixture-of-experts model): this rank is member ep_rank of an
  /// expert-parallel group of ep_size ranks (plan::Stage::expert_parallel_group), holds the
  /// routed experts plan::ExpertOwnership gives it and exchanges tokens over `ep` (null when
  /// ep_size is 1). `ep` must outlive the module. The routed experts are split over the
  /// expert_tp_size ranks of an expert-tp group (expert_tp_rank this rank's place in it; 0:
  /// tp_size and tp_rank). expert_tp_size divides tp_size or is a multiple of it. Dividing it,
  /// each tensor group's tokens are split into tp_size / expert_tp_size slices, expert-tp group
  /// tp_rank / expert_tp_size taking slice tp_rank / expert_tp_size to its experts (the folded
  /// layout; moe_layer.h). Above it, the expert-tp group spans expert_tp_size / tp_size tensor
  /// groups, and `expert_gather` (plan::Stage::expert_token_gather_group, non-null then) joins
  /// this rank with its members of the same tp rank.
  int ep_rank = 0;
  int ep_size = 1;
  int expert_tp_size = 0;
  int expert_tp_rank = 0;
  std::vector<int> expert_counts;  // plan::Stage::expert_counts: empty for an even split
  Communicator* ep = nullptr;
  Communicator* expert_gather = nullptr;
  uint64_t seed = 0;        // initial parameters depend on (seed, layer, name) only, never on
                            // tp/pp/dp, so every plan starts from the same model
  int init_threads = 1;     // CPU threads that fill the initial parameters (the rank's share of
                            // the node's cores); the values do not depend on it
};

/// Builds the stage of a gpt-family model (layer indices as plan::Model::layers:
/// 0 = embedding, 1..num_layers = blocks, num_layers+1 = head). `tp_comm` is the tensor group
/// (size tp_size), unused when tp_size == 1. `backend` (from make_backend) holds the
/// parameters and activations and sets their compute dtype; it must outlive the module.
/// Throws whale::Error for other families.
std::unique_ptr<StageModule> make_gpt_stage(const plan::Model& model,
                                            const StageModuleOptions& options, Backend& backend,
                                            Communicator* tp_comm);
/// The same for a llama-family model (RMSNorm, RoPE, grouped-query attention, SwiGLU; tied or
/// untied LM head). With tied embeddings, a stage that holds the head but not the embedding
/// holds a copy of the token table under its name (kTokenTable), which the executor keeps equal
/// to the first stage's (tied_embedding.h). Throws whale::Error for other families and for a tp
/// that does not divide heads, kv_heads and ffn_hidden.
std::unique_ptr<StageModule> make_llama_stage(const plan::Model& model,
                                              const StageModuleOptions& options,
                                              Backend& backend, Communicator* tp_comm);
/// The token table's parameter name.
inline constexpr const char* kTokenTable = "embedding.wte";
/// True when the model's LM head is its token table (a llama with tie_embeddings).
bool ties_token_table(const plan::Model& model);

/// The stage of the model's family: make_gpt_stage or make_llama_stage. Throws whale::Error
/// naming `family` for a family whale-run does not train.
std::unique_ptr<StageModule> make_stage_module(const plan::Model& model,
                                               const StageModuleOptions& options,
                                               Backend& backend, Communicator* tp_comm);

}  // namespace whale::exec

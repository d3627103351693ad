// File: llama_stage.cpp
// The Llama family of BlockStage (block_stage.h): token embedding without learned positions
// (RoPE in the blocks), Llama blocks, final RMSNorm and the LM head, tied to the token table
// (or, in a later stage than the embedding, to its copy) or its own; make_llama_stage.
#include <string>
#include <vector>

#include "model/block_stage.h"
#include "model/llama_block.h"
#include "model/llama_parameters.h"

namespace whale::exec {
namespace llama {
namespace {

struct LlamaFamily {
  using Dims = llama::Dims;
  using Block = llama::Block;
  using BlockParams = llama::BlockParams;
  using BlockActivations = llama::BlockActivations;
  using BlockScratch = llama::BlockScratch;

  static Dims dims(const plan::Model& model) { return llama_dims(model); }

  /// Tensor parallelism splits the query heads, the key/value heads and the SwiGLU width.
  static void validate_tp(const plan::Model& model, const Dims& d, int tp_size) {
    const auto require = [&](const char* field, int value) {
      if (value % tp_size != 0)
        throw Error(model.source_file, field,
                    std::string(field) + " " + std::to_string(value) +
                        " divisible by the tensor-parallel degree " + std::to_string(tp_size),
                    "choose a tp that divides heads, kv_heads and ffn_hidden");
    };
    require("heads", d.heads);
    require("kv_heads", d.kv_heads);
    require("ffn_hidden", d.ffn);
  }

  static std::vector<ParameterSpec> layer_parameters(const Dims& d, int layer) {
    return llama::layer_parameters(d, layer);
  }

  static constexpr ExpertKind kExpertKind = ExpertKind::swiglu;

  /// `p`: the held parameters of model layer `layer` in layer_parameters order.
  static BlockParams block_params(const Dims& d, int layer, const std::vector<Param>& p) {
    if (d.moe && d.moe->is_moe_block(layer - 1)) {
      const std::size_t first = d.qkv_bias ? 5 : 4;  // the MoE part follows mlp_norm
      BlockParams b{p[0], p[1], d.qkv_bias ? p[2] : Param{}, p[first - 2], p[first - 1],
                    Param{}, Param{}, Param{}, {}};
      const bool bias = d.moe->router == plan::MoeRouter::sigmoid_bias;
      b.moe = moe_params(p, first, kExpertKind, d.moe->shared_experts,
                         routed_held(p.size() - first, d.moe->shared_experts, kExpertKind, bias),
                         bias);
      return b;
    }
    if (d.qkv_bias) return {p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], {}};
    return {p[0], p[1], Param{}, p[2], p[3], p[4], p[5], p[6], {}};
  }

  /// Token embedding (the embedding op without a position table); final RMSNorm; the LM head is
  /// the token table when tied.
  struct Ends {
    Dims dims;
    Param wte, head_norm_w, head_w;

    template <class Find>
    void bind(const Dims& d, Find find) {
      dims = d;
      wte = find(kTokenTable);
      head_norm_w = find("head.norm.weight");
      head_w = find(d.tie_embeddings ? kTokenTable : "head.weight");  // tied: the table or its copy
    }
    /// `positions` is the GPT's (whether this rank adds the position table): a Llama has none.
    void embedding_forward(Backend& be, TensorView x, ConstTensorView tokens, int samples,
                           bool /*positions*/) {
      be.embedding_forward(x, tokens, wte.value, ConstTensorView{}, samples, dims.sequence,
                           dims.channels);
    }
    void embedding_backward(Backend& be, ConstTensorView dx, ConstTensorView tokens,
                            int samples) {
      be.embedding_backward(wte.grad, TensorView{}, dx, tokens, samples, dims.sequence,
                            dims.channels);
    }
    void head_norm_forward(Backend& be, HeadActivations& h, ConstTensorView x, int rows) {
      const std::size_t n = static_cast<std::size_t>(rows);
      reuse_or_allocate(h.norm, be, n * dims.channels, be.compute_dtype());
      reuse_or_allocate(h.rstd, be, n, DType::fp32);
      be.rmsnorm_forward(h.norm, h.rstd, x, head_norm_w.value, rows, dims.channels);
    }
    void head_norm_backward(Backend& be, TensorView dx, ConstTensorView dnorm, ConstTensorView x,
                            const HeadActivations& h, int rows) {
      be.rmsnorm_backward(dx, head_norm_w.grad, dnorm, x, head_norm_w.value, h.rstd, rows,
                          dims.channels);
    }
    std::vector<TensorView> head_norm_gradients() const { return {head_norm_w.grad}; }
    Param head_weight() const { return head_w; }
  };
};

}  // namespace
}  // namespace llama

std::unique_ptr<StageModule> make_llama_stage(const plan::Model& model,
                                              const StageModuleOptions& options,
                                              Backend& backend, Communicator* tp_comm) {
  if (options.tp_size > 1 && (tp_comm == nullptr || tp_comm->size() != options.tp_size))
    throw std::invalid_argument("make_llama_stage: tp_size " + std::to_string(options.tp_size) +
                                " needs a tensor-parallel communicator of that size");
  return std::make_unique<BlockStage<llama::LlamaFamily>>(model, options, backend, tp_comm);
}

}  // namespace whale::exec

// File: gpt_stage.cpp
// The GPT family of BlockStage (block_stage.h): token + learned position embedding, GPT blocks,
// final LayerNorm and an untied LM head; make_gpt_stage.
#include <string>
#include <vector>

#include "model/block_stage.h"
#include "model/gpt_block.h"
#include "model/gpt_parameters.h"

namespace whale::exec {
namespace gpt {
namespace {

/// The GPT family of BlockStage: learned positions, LayerNorm, an untied LM head.
struct GptFamily {
  using Dims = gpt::Dims;
  using Block = gpt::Block;
  using BlockParams = gpt::BlockParams;
  using BlockActivations = gpt::BlockActivations;
  using BlockScratch = gpt::BlockScratch;

  static Dims dims(const plan::Model& model) { return gpt_dims(model); }

  static void validate_tp(const plan::Model& model, const Dims& d, int tp_size) {
    const std::string& file = model.source_file;
    if (d.heads % tp_size != 0)
      throw Error(file, "heads", "heads " + std::to_string(d.heads) +
                                     " divisible by the tensor-parallel degree " +
                                     std::to_string(tp_size));
    if (d.ffn % tp_size != 0)
      throw Error(file, "ffn_hidden", "ffn_hidden " + std::to_string(d.ffn) +
                                          " divisible by the tensor-parallel degree " +
                                          std::to_string(tp_size));
  }

  static std::vector<ParameterSpec> layer_parameters(const Dims& d, int layer) {
    return gpt::layer_parameters(d, layer);
  }

  static constexpr ExpertKind kExpertKind = ExpertKind::gelu;

  /// `p`: the held parameters of model layer `layer` in layer_parameters order.
  static BlockParams block_params(const Dims& d, int layer, const std::vector<Param>& p) {
    if (d.moe && d.moe->is_moe_block(layer - 1)) {
      constexpr std::size_t first = 8;  // the MoE part follows ln2
      BlockParams b{p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], {}, {}, {}, {}, {}};
      const bool bias = d.moe->router == plan::MoeRouter::sigmoid_bias;
      b.moe = moe_params(p, first, kExpertKind, d.moe->shared_experts,
                         routed_held(p.size() - first, d.moe->shared_experts, kExpertKind, bias),
                         bias);
      return b;
    }
    return {p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9], p[10], p[11], {}};
  }

  /// Token + position embedding; final LayerNorm and LM head.
  struct Ends {
    Dims dims;
    Param wte, wpe, head_ln_w, head_ln_b, head_w;

    template <class Find>
    void bind(const Dims& d, Find find) {
      dims = d;
      wte = find("embedding.wte");
      wpe = find("embedding.wpe");
      head_ln_w = find("head.ln.weight");
      head_ln_b = find("head.ln.bias");
      head_w = find("head.weight");
    }
    /// Without `positions` (a vocabulary-parallel table's tensor ranks but the first, whose
    /// partial rows are summed with it) the position table adds nothing. The backward adds the
    /// whole position gradient on every rank: the summed rows hold the table once.
    void embedding_forward(Backend& be, TensorView x, ConstTensorView tokens, int samples,
                           bool positions) {
      be.embedding_forward(x, tokens, wte.value, positions ? wpe.value : ConstTensorView{}, samples,
                           dims.sequence, dims.channels);
    }
    void embedding_backward(Backend& be, ConstTensorView dx, ConstTensorView tokens,
                            int samples) {
      be.embedding_backward(wte.grad, wpe.grad, dx, tokens, samples, dims.sequence,
                            dims.channels);
    }
    void head_norm_forward(Backend& be, HeadActivations& h, ConstTensorView x, int rows) {
      const std::size_t n = static_cast<std::size_t>(rows);
      reuse_or_allocate(h.norm, be, n * dims.channels, be.compute_dtype());
      reuse_or_allocate(h.mean, be, n, DType::fp32);
      reuse_or_allocate(h.rstd, be, n, DType::fp32);
      be.layernorm_forward(h.norm, h.mean, h.rstd, x, head_ln_w.value, head_ln_b.value, rows,
                           dims.channels);
    }
    void head_norm_backward(Backend& be, TensorView dx, ConstTensorView dnorm, ConstTensorView x,
                            const HeadActivations& h, int rows) {
      be.layernorm_backward(dx, head_ln_w.grad, head_ln_b.grad, dnorm, x, head_ln_w.value,
                            h.mean, h.rstd, rows, dims.channels);
    }
    std::vector<TensorView> head_norm_gradients() const { return {head_ln_w.grad, head_ln_b.grad}; }
    Param head_weight() const { return head_w; }
  };
};

}  // namespace
}  // namespace gpt

std::unique_ptr<StageModule> make_gpt_stage(const plan::Model& model,
                                            const StageModuleOptions& options, Backend& backend,
                                            Communicator* tp_comm) {
  if (options.tp_size > 1 && (tp_comm == nullptr || tp_comm->size() != options.tp_size))
    throw std::invalid_argument("make_gpt_stage: tp_size " + std::to_string(options.tp_size) +
                                " needs a tensor-parallel communicator of that size");
  return std::make_unique<BlockStage<gpt::GptFamily>>(model, options, backend, tp_comm);
}

}  // namespace whale::exec

// File: gpt_stage.cpp
// GptStage: the StageModule of a gpt-family model over layers [first, end): the embedding,
// transformer blocks and the head (final LN, untied LM head, cross-entropy), with parameters
// in one flat buffer, activations per micro-batch in flight, and recomputation per options.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "model/gpt_block.h"
#include "model/gpt_parameters.h"
#include "backend/ops_slowdown.h"
#include "whale/exec/backend/cpu_backend.h"
#include "whale/exec/model/stage_module.h"
#include "whale/plan/error.h"
#include "whale/plan/check.h"

namespace whale::exec {
namespace gpt {
namespace {

/// What a micro-batch keeps between forward and backward. N = samples * T. Forward overwrites
/// every buffer, so a finished state is reused for a later micro-batch.
struct MicroBatchState {
  int samples = 0;
  std::vector<int32_t> inputs, targets;   // (samples, T), host
  std::vector<Buffer> xs;                 // xs[k]: input of block k (N, C); xs[blocks]: head input
  std::vector<BlockActivations> blocks;   // empty entries under full recomputation
  Buffer head_ln, head_mean, head_rstd;   // (N, C), (N), (N)
  Buffer logits;                          // (N, V)
};

class GptStage : public StageModule {
 public:
  GptStage(const plan::Model& model, const StageModuleOptions& options, Communicator* tp)
      : dims_(gpt_dims(model)), options_(options) {
    validate(model);
    backend_ = make_slowed_backend(make_cpu_backend(), options.slowdown_factor);
    has_embedding_ = options.first_layer == 0;
    has_head_ = options.end_layer == dims_.layers + 2;
    first_block_ = std::max(options.first_layer, 1);
    end_block_ = std::min(options.end_layer, dims_.layers + 1);
    create_parameters();
    for (int layer = first_block_; layer < end_block_; ++layer)
      blocks_.emplace_back(dims_, options.tp_size, block_params(layer), *backend_, tp,
                           block_scratch_);
  }

  std::size_t input_floats_per_sample() const override {
    return has_embedding_ ? 0 : static_cast<std::size_t>(dims_.sequence) * dims_.channels;
  }
  std::size_t output_floats_per_sample() const override {
    return has_head_ ? 0 : static_cast<std::size_t>(dims_.sequence) * dims_.channels;
  }

  double forward(int micro_batch, const MicroBatchTokens& tokens, const float* input,
                 float* output) override {
    MicroBatchState& s = in_flight_[micro_batch];
    if (!spare_.empty() && s.xs.empty()) {  // reuse a finished micro-batch's memory
      s = std::move(spare_.back());
      spare_.pop_back();
    }
    s.samples = tokens.samples;
    s.inputs = tokens.inputs;
    s.targets = tokens.targets;
    const std::size_t nc = rows(s) * static_cast<std::size_t>(dims_.channels);
    const bool full = options_.recompute == plan::Recompute::full;
    s.xs.resize(blocks_.size() + 1);
    for (Buffer& x : s.xs) reuse_or_allocate(x, *backend_, nc);  // every one is overwritten
    if (has_embedding_)
      backend_->embedding_forward(s.xs[0].data(), s.inputs.data(), wte_.value, wpe_.value,
                                  s.samples, dims_.sequence, dims_.channels);
    else
      backend_->copy(s.xs[0].data(), input, nc);
    s.blocks.resize(blocks_.size());
    for (std::size_t k = 0; k < blocks_.size(); ++k) {
      blocks_[k].forward(s.samples, s.xs[k].data(), s.xs[k + 1].data(),
                         full ? dropped_ : s.blocks[k],
                         options_.recompute == plan::Recompute::none);
    }
    if (!has_head_) {
      backend_->copy(output, s.xs.back().data(), nc);
      s.xs.pop_back();  // backward needs block inputs only
      return 0.0;
    }
    const double loss = head_forward(s);
    if (full) drop_head_activations(s);
    return loss;
  }

  void backward(int micro_batch, const float* output_gradient, float* input_gradient,
                double loss_scale) override {
    auto it = in_flight_.find(micro_batch);
    WHALE_CHECK(it != in_flight_.end(), "GptStage::backward: micro-batch " +
                                            std::to_string(micro_batch) +
                                            " has no forward in flight");
    MicroBatchState& s = it->second;
    const std::size_t nc = rows(s) * static_cast<std::size_t>(dims_.channels);
    Buffer dx(*backend_, nc);
    if (has_head_)
      head_backward(s, dx.data(), loss_scale);
    else
      backend_->copy(dx.data(), output_gradient, nc);
    for (std::size_t k = blocks_.size(); k-- > 0;) {
      if (options_.recompute == plan::Recompute::full) {  // redo the block's forward
        reuse_or_allocate(recomputed_output_, *backend_, nc);
        blocks_[k].forward(s.samples, s.xs[k].data(), recomputed_output_.data(), s.blocks[k],
                           true);
      }
      reuse_or_allocate(dx_spare_, *backend_, nc);  // overwritten by the block
      blocks_[k].backward(s.samples, s.xs[k].data(), dx.data(), dx_spare_.data(), s.blocks[k]);
      // Full recomputation holds one block's activations at a time; otherwise they are kept
      // for the next forward (the peak, all blocks' activations, is the same).
      if (options_.recompute == plan::Recompute::full) s.blocks[k] = BlockActivations{};
      std::swap(dx, dx_spare_);
    }
    if (has_embedding_)
      backend_->embedding_backward(wte_.grad, wpe_.grad, dx.data(), s.inputs.data(), s.samples,
                                   dims_.sequence, dims_.channels);
    else
      backend_->copy(input_gradient, dx.data(), nc);
    spare_.push_back(std::move(s));  // its buffers serve a later forward
    in_flight_.erase(it);
  }

  std::vector<ParameterView> parameters() override { return views_; }

  void zero_gradients() override { backend_->fill_zero(gradients_.data(), gradients_.count()); }

 private:
  std::size_t rows(const MicroBatchState& s) const {
    return static_cast<std::size_t>(s.samples) * dims_.sequence;
  }

  void validate(const plan::Model& model) const {
    const std::string& file = model.source_file;
    const auto& o = options_;
    if (o.first_layer < 0 || o.end_layer <= o.first_layer || o.end_layer > dims_.layers + 2)
      throw Error(file, "layers",
                  "a stage range within 0.." + std::to_string(dims_.layers + 2) + ", got [" +
                      std::to_string(o.first_layer) + ", " + std::to_string(o.end_layer) + ")");
    if (o.tp_size < 1 || o.tp_rank < 0 || o.tp_rank >= o.tp_size)
      throw Error(file, "tp", "tp rank " + std::to_string(o.tp_rank) + " of " +
                                  std::to_string(o.tp_size) + " is not a valid shard");
    if (dims_.heads % o.tp_size != 0)
      throw Error(file, "heads", "heads " + std::to_string(dims_.heads) +
                                     " divisible by the tensor-parallel degree " +
                                     std::to_string(o.tp_size));
    if (dims_.ffn % o.tp_size != 0)
      throw Error(file, "ffn_hidden", "ffn_hidden " + std::to_string(dims_.ffn) +
                                          " divisible by the tensor-parallel degree " +
                                          std::to_string(o.tp_size));
  }

  /// One flat value buffer and one flat gradient buffer; each parameter is the shard of the
  /// full tensor initialised from (seed, name).
  void create_parameters() {
    std::vector<std::pair<ParameterSpec, TensorShard>> shards;
    std::size_t total = 0;
    for (int layer = options_.first_layer; layer < options_.end_layer; ++layer)
      for (const ParameterSpec& spec : layer_parameters(dims_, layer)) {
        shards.emplace_back(spec, shard_layout(spec, options_.tp_rank, options_.tp_size));
        total += shards.back().second.shard_count();
      }
    values_ = Buffer(*backend_, total);
    gradients_ = Buffer(*backend_, total);
    std::size_t offset = 0;
    std::vector<float> full, shard;
    for (const auto& [spec, layout] : shards) {
      full.resize(layout.full_count());
      shard.resize(layout.shard_count());
      initialize_full(spec, options_.seed, full.data());
      extract_shard(layout, full.data(), shard.data());
      backend_->upload(values_.data() + offset, shard.data(), shard.size());
      views_.push_back({spec.name, values_.data() + offset, gradients_.data() + offset,
                        shard.size(), layout.replicated()});
      offset += shard.size();
    }
    auto find = [&](const std::string& name) {
      for (const ParameterView& v : views_)
        if (v.name == name) return Param{v.value, v.gradient};
      return Param{};
    };
    wte_ = find("embedding.wte");
    wpe_ = find("embedding.wpe");
    head_ln_w_ = find("head.ln.weight");
    head_ln_b_ = find("head.ln.bias");
    head_w_ = find("head.weight");
  }

  BlockParams block_params(int layer) const {
    std::vector<Param> p;
    for (const ParameterSpec& spec : layer_parameters(dims_, layer))
      for (const ParameterView& v : views_)
        if (v.name == spec.name) p.push_back({v.value, v.gradient});
    return {p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9], p[10], p[11]};
  }

  /// Final LN, LM head, summed cross-entropy of the micro-batch.
  double head_forward(MicroBatchState& s) {
    const int n = static_cast<int>(rows(s)), C = dims_.channels, V = dims_.vocabulary;
    reuse_or_allocate(s.head_ln, *backend_, rows(s) * C);
    reuse_or_allocate(s.head_mean, *backend_, rows(s));
    reuse_or_allocate(s.head_rstd, *backend_, rows(s));
    backend_->layernorm_forward(s.head_ln.data(), s.head_mean.data(), s.head_rstd.data(),
                                s.xs.back().data(), head_ln_w_.value, head_ln_b_.value, n, C);
    reuse_or_allocate(s.logits, *backend_, rows(s) * V);
    backend_->linear_forward(s.logits.data(), s.head_ln.data(), head_w_.value, nullptr, n, C, V);
    return backend_->cross_entropy_forward(s.logits.data(), s.targets.data(), n, V);
  }

  void drop_head_activations(MicroBatchState& s) {
    s.head_ln.reset();
    s.head_mean.reset();
    s.head_rstd.reset();
    s.logits.reset();
  }

  /// dx (N, C) += gradient of loss_scale * summed loss w.r.t. the head input.
  void head_backward(MicroBatchState& s, float* dx, double loss_scale) {
    if (s.logits.empty()) head_forward(s);  // full recomputation
    const int n = static_cast<int>(rows(s)), C = dims_.channels, V = dims_.vocabulary;
    Buffer dlogits(*backend_, rows(s) * V), dln(*backend_, rows(s) * C);
    backend_->cross_entropy_backward(dlogits.data(), s.logits.data(), s.targets.data(), n, V,
                                     loss_scale);
    backend_->linear_backward(dln.data(), head_w_.grad, nullptr, dlogits.data(),
                              s.head_ln.data(), head_w_.value, n, C, V);
    backend_->layernorm_backward(dx, head_ln_w_.grad, head_ln_b_.grad, dln.data(),
                                 s.xs.back().data(), head_ln_w_.value, s.head_mean.data(),
                                 s.head_rstd.data(), n, C);
  }

  Dims dims_;
  StageModuleOptions options_;
  std::unique_ptr<Backend> backend_;
  bool has_embedding_ = false, has_head_ = false;
  int first_block_ = 1, end_block_ = 1;  // model layers of the blocks held
  Buffer values_, gradients_;
  std::vector<ParameterView> views_;
  Param wte_, wpe_, head_ln_w_, head_ln_b_, head_w_;
  std::vector<Block> blocks_;
  std::map<int, MicroBatchState> in_flight_;
  /// Finished micro-batches whose buffers the next forwards reuse (no fresh zero-filled memory
  /// per step); scratch activations of full recomputation.
  std::vector<MicroBatchState> spare_;
  BlockActivations dropped_;
  Buffer recomputed_output_, dx_spare_;
  BlockScratch block_scratch_;  // shared by blocks_ (they run one at a time)
};

}  // namespace
}  // namespace gpt

std::unique_ptr<StageModule> make_gpt_stage(const plan::Model& model,
                                            const StageModuleOptions& options,
                                            Communicator* tp_comm) {
  if (options.tp_size > 1 && (tp_comm == nullptr || tp_comm->size() != options.tp_size))
    throw std::invalid_argument("make_gpt_stage: tp_size " + std::to_string(options.tp_size) +
                                " needs a tensor-parallel communicator of that size");
  return std::make_unique<gpt::GptStage>(model, options, tp_comm);
}

}  // namespace whale::exec

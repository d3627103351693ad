// File: gpt_stage.cpp
// GptStage: the StageModule of a gpt-family model over layers [first, end): the embedding,
// transformer blocks and the head (final LN, untied LM head, cross-entropy), with parameters
// in one flat buffer, activations per micro-batch in flight, and recomputation per options.
// Under sequence parallelism the blocks' inputs and outputs hold this tp rank's rows only
// (tensor_parallel_region.h); the stage's borders (embedding, head, pipeline neighbours) see
// whole tensors.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "model/gpt_block.h"
#include "model/gpt_parameters.h"
#include "whale/exec/model/stage_module.h"
#include "whale/plan/error.h"
#include "whale/plan/check.h"

namespace whale::exec {
namespace gpt {
namespace {

/// What a micro-batch keeps between forward and backward, in the compute dtype (act) unless
/// said. N = samples * T, Nh = the rows this tp rank holds (N/tp under sequence parallelism).
/// Forward overwrites every tensor, so a finished state is reused for a later micro-batch.
struct MicroBatchState {
  int samples = 0;
  Tensor inputs, targets;                 // (samples, T) i32, uploaded once per micro-batch
  std::vector<Tensor> xs;                 // xs[k]: input of block k (Nh, C); xs[blocks]: head's
  std::vector<BlockActivations> blocks;   // empty entries under full recomputation
  Tensor head_x;                          // (N, C): the gathered head input (sequence parallel)
  Tensor head_ln, head_mean, head_rstd;   // (N, C), (N) fp32, (N) fp32
  Tensor logits;                          // (N, V)
};

class GptStage : public StageModule {
 public:
  GptStage(const plan::Model& model, const StageModuleOptions& options, Backend& backend,
           Communicator* tp)
      : dims_(gpt_dims(model)), options_(options), backend_(&backend),
        act_(backend.compute_dtype()),
        region_(backend, options.tp_size > 1 ? tp : nullptr, options.sequence_parallel) {
    validate(model);
    has_embedding_ = options.first_layer == 0;
    has_head_ = options.end_layer == dims_.layers + 2;
    first_block_ = std::max(options.first_layer, 1);
    end_block_ = std::min(options.end_layer, dims_.layers + 1);
    create_parameters();
    for (int layer = first_block_; layer < end_block_; ++layer)
      blocks_.emplace_back(dims_, options.tp_size, block_params(layer), *backend_, region_,
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
    upload_indices(s.inputs, tokens.inputs);
    upload_indices(s.targets, tokens.targets);
    const std::size_t nc = rows(s) * static_cast<std::size_t>(dims_.channels);
    const bool full = options_.recompute == plan::Recompute::full;
    s.xs.resize(blocks_.size() + 1);
    for (Tensor& x : s.xs) reuse_or_allocate(x, *backend_, held(s), act_);  // each overwritten
    const TensorView x0 = region_.all_rows(s.xs[0], border_, nc);
    if (has_embedding_)
      backend_->embedding_forward(x0, s.inputs, wte_.value, wpe_.value, s.samples,
                                  dims_.sequence, dims_.channels);
    else
      upload_floats(x0, input);
    region_.keep_held_rows(x0, s.xs[0]);
    s.blocks.resize(blocks_.size());
    for (std::size_t k = 0; k < blocks_.size(); ++k) {
      blocks_[k].forward(s.samples, s.xs[k], s.xs[k + 1], full ? dropped_ : s.blocks[k],
                         options_.recompute == plan::Recompute::none);
    }
    if (!has_head_) {
      download_floats(output, region_.enter(s.xs.back(), border_));
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
    Tensor dx(*backend_, held(s), act_);
    const TensorView dx_all = region_.all_rows(dx, border_, nc);
    if (has_head_) {
      backend_->fill_zero(dx_all, Stream::compute);  // head_backward adds to it
      head_backward(s, dx_all, loss_scale);
    } else {
      upload_floats(dx_all, output_gradient);
    }
    region_.keep_held_rows(dx_all, dx);
    if (has_head_) layer_backward_done(dims_.layers + 1);
    for (std::size_t k = blocks_.size(); k-- > 0;) {
      if (options_.recompute == plan::Recompute::full) {  // redo the block's forward
        reuse_or_allocate(recomputed_output_, *backend_, held(s), act_);
        blocks_[k].forward(s.samples, s.xs[k], recomputed_output_, s.blocks[k], true);
      }
      reuse_or_allocate(dx_spare_, *backend_, held(s), act_);  // overwritten by the block
      blocks_[k].backward(s.samples, s.xs[k], dx, dx_spare_, s.blocks[k]);
      // Full recomputation holds one block's activations at a time; otherwise they are kept
      // for the next forward (the peak, all blocks' activations, is the same).
      if (options_.recompute == plan::Recompute::full) s.blocks[k] = BlockActivations{};
      std::swap(dx, dx_spare_);
      layer_backward_done(first_block_ + static_cast<int>(k));
    }
    const ConstTensorView dx_in = region_.enter(dx, border_);
    if (has_embedding_) {
      backend_->embedding_backward(wte_.grad, wpe_.grad, dx_in, s.inputs, s.samples,
                                   dims_.sequence, dims_.channels);
      layer_backward_done(0);
    } else {
      download_floats(input_gradient, dx_in);
    }
    spare_.push_back(std::move(s));  // its buffers serve a later forward
    in_flight_.erase(it);
  }

  std::vector<ParameterView> parameters() override { return views_; }

  void zero_gradients() override { backend_->fill_zero(gradients_, Stream::compute); }

  void parameters_updated() override {
    if (!compute_values_.empty()) backend_->cast(compute_values_, values_, Stream::compute);
  }

 private:
  /// dst (i32) = the host indices, uploaded (and waited for: `host` may change after).
  void upload_indices(Tensor& dst, const std::vector<int32_t>& host) {
    reuse_or_allocate(dst, *backend_, host.size(), DType::i32);
    backend_->upload(dst, host.data(), Stream::compute);
    backend_->synchronize(Stream::compute);
  }

  /// dst (act) = dst.count() host floats, rounded to the compute dtype.
  void upload_floats(TensorView dst, const float* host) {
    if (act_ == DType::fp32) {
      backend_->upload(dst, host, Stream::compute);
    } else {
      reuse_or_allocate(host_staging_, *backend_, dst.count, DType::fp32);
      backend_->upload(host_staging_, host, Stream::compute);
      backend_->cast(dst, host_staging_, Stream::compute);
    }
    backend_->synchronize(Stream::compute);
  }

  /// host[0, src.count) = src (act) widened to fp32 (exact).
  void download_floats(float* host, ConstTensorView src) {
    if (act_ == DType::fp32) {
      backend_->download(host, src, Stream::compute);
    } else {
      reuse_or_allocate(host_staging_, *backend_, src.count, DType::fp32);
      backend_->cast(host_staging_, src, Stream::compute);
      backend_->download(host, host_staging_, Stream::compute);
    }
    backend_->synchronize(Stream::compute);
  }

  std::size_t rows(const MicroBatchState& s) const {
    return static_cast<std::size_t>(s.samples) * dims_.sequence;
  }
  /// Elements of a block input or output this tp rank holds: (Nh, C).
  std::size_t held(const MicroBatchState& s) const {
    return static_cast<std::size_t>(region_.held_rows(static_cast<int>(rows(s)))) *
           dims_.channels;
  }
  /// The head's input over all rows: gathered by head_forward under sequence parallelism.
  ConstTensorView head_input(const MicroBatchState& s) const {
    return region_.sequence_parallel() ? s.head_x.slice(0, rows(s) * dims_.channels)
                                       : ConstTensorView(s.xs.back());
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
    if (o.sequence_parallel && dims_.sequence % o.tp_size != 0)
      throw Error(file, "sequence",
                  "a sequence divisible by the tensor-parallel degree " +
                      std::to_string(o.tp_size) + " under sequence parallelism, got " +
                      std::to_string(dims_.sequence),
                  "choose a tp degree that divides the sequence, or turn sequence_parallel off");
  }

  /// One flat fp32 value (master) tensor, one flat fp32 gradient tensor and, for a 16-bit
  /// compute dtype, one flat copy of the values in it; each parameter is the shard of the full
  /// tensor initialised from (seed, name).
  void create_parameters() {
    struct Shard {
      ParameterSpec spec;
      TensorShard layout;
      int layer;
    };
    std::vector<Shard> shards;
    std::size_t total = 0;
    for (int layer = options_.first_layer; layer < options_.end_layer; ++layer)
      for (const ParameterSpec& spec : layer_parameters(dims_, layer)) {
        shards.push_back({spec, shard_layout(spec, options_.tp_rank, options_.tp_size), layer});
        total += shards.back().layout.shard_count();
      }
    values_ = Tensor(*backend_, total, DType::fp32);
    gradients_ = Tensor(*backend_, total, DType::fp32);
    if (act_ != DType::fp32) compute_values_ = Tensor(*backend_, total, act_);
    std::size_t offset = 0;
    std::vector<float> full, shard;
    for (const auto& [spec, layout, layer] : shards) {
      full.resize(layout.full_count());
      shard.resize(layout.shard_count());
      initialize_full(spec, options_.seed, full.data());
      extract_shard(layout, full.data(), shard.data());
      backend_->upload(values_.slice(offset, shard.size()), shard.data(), Stream::compute);
      backend_->synchronize(Stream::compute);  // `shard` is refilled next
      views_.push_back({spec.name, values_.slice(offset, shard.size()),
                        gradients_.slice(offset, shard.size()), shard.size(),
                        layout.replicated(), layer});
      offset += shard.size();
    }
    parameters_updated();
    auto find = [&](const std::string& name) {
      for (const ParameterView& v : views_)
        if (v.name == name) return param(v);
      return Param{};
    };
    wte_ = find("embedding.wte");
    wpe_ = find("embedding.wpe");
    head_ln_w_ = find("head.ln.weight");
    head_ln_b_ = find("head.ln.bias");
    head_w_ = find("head.weight");
  }

  /// The compute-dtype value of a parameter (its master under fp32) and its gradient.
  Param param(const ParameterView& v) const {
    if (compute_values_.empty()) return {v.value, v.gradient};
    const std::size_t offset =
        (static_cast<const char*>(v.value.data) - static_cast<const char*>(values_.view().data)) /
        sizeof(float);
    return {compute_values_.slice(offset, v.count), v.gradient};
  }

  BlockParams block_params(int layer) const {
    std::vector<Param> p;
    for (const ParameterSpec& spec : layer_parameters(dims_, layer))
      for (const ParameterView& v : views_)
        if (v.name == spec.name) p.push_back(param(v));
    return {p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9], p[10], p[11]};
  }

  /// Final LN, LM head, summed cross-entropy of the micro-batch.
  double head_forward(MicroBatchState& s) {
    const int n = static_cast<int>(rows(s)), C = dims_.channels, V = dims_.vocabulary;
    reuse_or_allocate(s.head_ln, *backend_, rows(s) * C, act_);
    reuse_or_allocate(s.head_mean, *backend_, rows(s), DType::fp32);
    reuse_or_allocate(s.head_rstd, *backend_, rows(s), DType::fp32);
    backend_->layernorm_forward(s.head_ln, s.head_mean, s.head_rstd,
                                region_.enter(s.xs.back(), s.head_x), head_ln_w_.value,
                                head_ln_b_.value, n, C);
    reuse_or_allocate(s.logits, *backend_, rows(s) * V, act_);
    backend_->linear_forward(s.logits, s.head_ln, head_w_.value, ConstTensorView{}, n, C, V);
    return backend_->cross_entropy_forward(s.logits, s.targets, n, V);
  }

  void drop_head_activations(MicroBatchState& s) {
    s.head_ln.reset();
    s.head_mean.reset();
    s.head_rstd.reset();
    s.logits.reset();
    s.head_x.reset();
  }

  /// dx (N, C) += gradient of loss_scale * summed loss w.r.t. the head input.
  void head_backward(MicroBatchState& s, TensorView dx, double loss_scale) {
    if (s.logits.empty()) head_forward(s);  // full recomputation
    const int n = static_cast<int>(rows(s)), C = dims_.channels, V = dims_.vocabulary;
    Tensor dlogits(*backend_, rows(s) * V, act_), dln(*backend_, rows(s) * C, act_);
    backend_->cross_entropy_backward(dlogits, s.logits, s.targets, n, V, loss_scale);
    backend_->linear_backward(dln, head_w_.grad, TensorView{}, dlogits, s.head_ln,
                              head_w_.value, n, C, V);
    backend_->layernorm_backward(dx, head_ln_w_.grad, head_ln_b_.grad, dln, head_input(s),
                                 head_ln_w_.value, s.head_mean, s.head_rstd, n, C);
  }

  Dims dims_;
  StageModuleOptions options_;
  Backend* backend_;
  DType act_;  // the compute dtype of activations and compute weights
  bool has_embedding_ = false, has_head_ = false;
  int first_block_ = 1, end_block_ = 1;  // model layers of the blocks held
  Tensor values_, gradients_;  // fp32 masters and gradients, flat
  Tensor compute_values_;      // the values in act_; empty under fp32 (the masters serve)
  Tensor host_staging_;        // fp32 scratch between act_ and host floats
  TensorParallelRegion region_;  // the tp group's borders; built before blocks_ refer to it
  Tensor border_;  // (N, C) whole tensors at the stage borders under sequence parallelism
  std::vector<ParameterView> views_;
  Param wte_, wpe_, head_ln_w_, head_ln_b_, head_w_;
  std::vector<Block> blocks_;
  std::map<int, MicroBatchState> in_flight_;
  /// Finished micro-batches whose buffers the next forwards reuse (no fresh zero-filled memory
  /// per step); scratch activations of full recomputation.
  std::vector<MicroBatchState> spare_;
  BlockActivations dropped_;
  Tensor recomputed_output_, dx_spare_;
  BlockScratch block_scratch_;  // shared by blocks_ (they run one at a time)
};

}  // namespace
}  // namespace gpt

std::unique_ptr<StageModule> make_gpt_stage(const plan::Model& model,
                                            const StageModuleOptions& options, Backend& backend,
                                            Communicator* tp_comm) {
  if (options.tp_size > 1 && (tp_comm == nullptr || tp_comm->size() != options.tp_size))
    throw std::invalid_argument("make_gpt_stage: tp_size " + std::to_string(options.tp_size) +
                                " needs a tensor-parallel communicator of that size");
  return std::make_unique<gpt::GptStage>(model, options, backend, tp_comm);
}

}  // namespace whale::exec

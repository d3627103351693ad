// File: block_stage.h
// Private: BlockStage<Family>, the StageModule of a transformer family over layers [first, end):
// the embedding, the family's blocks and the head (final norm, LM head, cross-entropy), with
// parameters in one flat buffer, activations per micro-batch in flight, and recomputation per
// options. Under sequence parallelism the blocks' inputs and outputs hold this tp rank's rows
// only (tensor_parallel_region.h); the stage's borders (embedding, head, pipeline neighbours)
// see whole tensors. Dropout (layer_dropout.h): the embedding's output and each block's sites,
// drawn from the micro-batch's step and samples. A Family (gpt_stage.cpp, llama_stage.cpp)
// provides:
//   Dims, Block, BlockParams, BlockActivations, BlockScratch;
//   static Dims dims(const plan::Model&)   (validates the hyperparameters, throws whale::Error);
//   static void validate_tp(const plan::Model&, const Dims&, int tp_size);
//   static std::vector<ParameterSpec> layer_parameters(const Dims&, int layer);
//   static BlockParams block_params(const Dims&, int layer, const std::vector<Param>& held);
//   static constexpr ExpertKind kExpertKind (the MLP of its experts, mixture-of-experts models);
//   Ends: bind(dims, find-parameter-by-name), embedding_forward/backward,
//         head_norm_forward/backward, head_norm_gradients(), head_weight().
#pragma once

#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "model/gpt_parameters.h"
#include "model/layer_dropout.h"
#include "model/moe_layer.h"
#include "model/tensor_parallel_ops.h"
#include "model/tensor_parallel_region.h"
#include "model/vocabulary_parallel.h"
#include "model/weight_gradients.h"
#include "whale/exec/backend/backend.h"
#include "whale/exec/model/stage_module.h"
#include "whale/plan/check.h"
#include "whale/plan/error.h"

namespace whale::exec {

using gpt::ParameterSpec;

/// The final norm's output (N, C) act and its fp32 row statistics: rstd (N), and the layernorm
/// mean (N; empty for RMSNorm).
struct HeadActivations {
  Tensor norm, mean, rstd;
};

/// What a micro-batch keeps between forward and backward, in the compute dtype (act) unless
/// said. N = samples * T, Nh = the rows this tp rank holds (N/tp under sequence parallelism).
/// Forward overwrites every tensor, so a finished state is reused for a later micro-batch.
template <class BlockActivations>
struct MicroBatchState {
  int samples = 0;
  MicroBatchDraw draw;                    // its dropout masks
  // (samples, T) i32, uploaded once per micro-batch; under a vocabulary-parallel table and head
  // (tp > 1) as rows of this rank's vocabulary slice, -1 for another rank's (vocabulary_parallel.h)
  Tensor inputs, targets;
  std::vector<Tensor> xs;                 // xs[k]: input of block k (Nh, C); xs[blocks]: head's
  std::vector<BlockActivations> blocks;   // empty entries under full recomputation
  HeadActivations head;                   // the final norm, over the held rows (Nh, C)
  Tensor logits;                          // (N, V), or (N, this rank's vocabulary slice)
  Tensor log_sum_exp;                     // (N, 2) fp32 under a vocabulary-parallel head
};

template <class Family>
class BlockStage : public StageModule {
 public:
  using Dims = typename Family::Dims;
  using Block = typename Family::Block;
  using BlockActivations = typename Family::BlockActivations;
  using BlockScratch = typename Family::BlockScratch;
  using Ends = typename Family::Ends;
  using State = MicroBatchState<BlockActivations>;

  BlockStage(const plan::Model& model, const StageModuleOptions& options, Backend& backend,
             Communicator* tp)
      : dims_(Family::dims(model)), options_(options), backend_(&backend),
        act_(backend.compute_dtype()),
        region_(backend, options.tp_size > 1 ? tp : nullptr, options.sequence_parallel),
        embedding_dropout_(model, 0, first_head(model, options), region_),
        weight_gradients_(backend) {
    validate(model);
    if (dims_.moe) {
      moe_context_.spec = *dims_.moe;
      moe_context_.kind = Family::kExpertKind;
      moe_context_.ep_rank = options.ep_rank;
      moe_context_.ep_size = options.ep_size;
      moe_context_.ep = options.ep_size > 1 ? options.ep : nullptr;
      moe_context_.tp_rank = options.tp_rank;
      moe_context_.tp_size = options.tp_size;
      moe_context_.expert_tp_size = expert_tp_size();
      moe_context_.expert_tp_rank = expert_tp_rank();
      moe_context_.expert_gather = expert_tp_size() > options.tp_size ? options.expert_gather : nullptr;
      moe_context_.owners = plan::ExpertOwnership(dims_.moe->experts, options.ep_size, options.expert_counts);
    }
    vocabulary_ = vocabulary_shard(dims_.vocabulary, options.tp_rank, std::max(options.tp_size, 1));
    has_embedding_ = options.first_layer == 0;
    has_head_ = options.end_layer == dims_.layers + 2;
    first_block_ = std::max(options.first_layer, 1);
    end_block_ = std::min(options.end_layer, dims_.layers + 1);
    create_parameters();
    for (int layer = first_block_; layer < end_block_; ++layer)
      blocks_.emplace_back(dims_, options.tp_size, block_params(layer), *backend_, region_,
                           block_scratch_, weight_gradients_,
                           dims_.moe && dims_.moe->is_moe_block(layer - 1) ? &moe_context_
                                                                             : nullptr,
                           LayerDropout(model, layer, first_head(model, options), region_));
  }

  std::size_t input_floats_per_sample() const override {
    return has_embedding_ ? 0 : static_cast<std::size_t>(dims_.sequence) * dims_.channels;
  }
  std::size_t output_floats_per_sample() const override {
    return has_head_ ? 0 : static_cast<std::size_t>(dims_.sequence) * dims_.channels;
  }

  double forward(int micro_batch, const MicroBatchTokens& tokens, const float* input,
                 float* output) override {
    State& s = in_flight_[micro_batch];
    if (!spare_.empty() && s.xs.empty()) {  // reuse a finished micro-batch's memory
      s = std::move(spare_.back());
      spare_.pop_back();
    }
    s.samples = tokens.samples;
    s.draw = {options_.seed, tokens.step, tokens.first_sample};
    upload_indices(s.inputs, vocabulary_rows(tokens.inputs));
    upload_indices(s.targets, vocabulary_rows(tokens.targets));
    const std::size_t nc = rows(s) * static_cast<std::size_t>(dims_.channels);
    const bool full = options_.recompute == plan::Recompute::full;
    s.xs.resize(blocks_.size() + 1);
    for (Tensor& x : s.xs) reuse_or_allocate(x, *backend_, held(s), act_);  // each overwritten
    const TensorView x0 = region_.all_rows(s.xs[0], border_, nc);
    if (has_embedding_) {
      timed_layer(0, false, true, [&] {
        // Vocabulary-parallel: each rank looks up the tokens of its slice (tp rank 0 adds the
        // positions), and the partial rows are summed (Megatron-LM's VocabParallelEmbedding).
        ends_.embedding_forward(*backend_, x0, s.inputs, s.samples, options_.tp_rank == 0);
        if (vocabulary_parallel())
          region_.leave(x0, s.xs[0]);
        else
          region_.keep_held_rows(x0, s.xs[0]);
        // On the held rows: the same mask, row for row, as on all of them.
        embedding_dropout_.apply(*backend_, s.xs[0], static_cast<int>(rows(s)), s.draw,
                                 DropoutPlace::embedding_output);
      });
    } else {
      upload_floats(x0, input);
      region_.keep_held_rows(x0, s.xs[0]);
    }
    s.blocks.resize(blocks_.size());
    for (std::size_t k = 0; k < blocks_.size(); ++k) {
      timed_layer(first_block_ + static_cast<int>(k), false, true, [&] {
        blocks_[k].forward(s.samples, s.xs[k], s.xs[k + 1], full ? dropped_ : s.blocks[k],
                           options_.recompute == plan::Recompute::none, s.draw);
      });
    }
    if (!has_head_) {
      download_floats(output, region_.enter(s.xs.back(), border_));
      s.xs.pop_back();  // backward needs block inputs only
      return 0.0;
    }
    double loss = 0;
    timed_layer(dims_.layers + 1, false, true, [&] { loss = head_forward(s); });
    if (full) drop_head_activations(s);
    return loss;
  }

  void backward(int micro_batch, const float* output_gradient, float* input_gradient,
                double loss_scale) override {
    weight_gradients_.run_now();
    backward_pass(micro_batch, output_gradient, input_gradient, loss_scale, true);
  }

  void backward_input(int micro_batch, const float* output_gradient, float* input_gradient,
                      double loss_scale) override {
    weight_gradients_.defer_to(micro_batch);
    backward_pass(micro_batch, output_gradient, input_gradient, loss_scale, false);
    weight_gradients_.run_now();
  }

  void backward_weight(int micro_batch) override {
    for (int layer = options_.end_layer; layer-- > options_.first_layer;) {
      weight_gradients_.run_deferred(micro_batch, layer);
      layer_backward_done(layer);
    }
    WHALE_CHECK(!weight_gradients_.has_deferred(micro_batch),
                "StageModule::backward_weight: micro-batch " + std::to_string(micro_batch) +
                    " deferred work of a layer outside the stage");
  }

  std::vector<ParameterView> parameters() override { return views_; }

  void zero_gradients() override {
    backend_->fill_zero(gradients_, Stream::compute);
    moe_context_.step_loads.clear();  // a step skipped (fp16 overflow) updates no bias
  }

  void parameters_updated() override {
    if (!compute_values_.empty()) backend_->cast(compute_values_, values_, Stream::compute);
  }

  /// The untrained parameters are sigmoid_bias routers' expert biases: DeepSeek-V3's
  /// auxiliary-loss-free balancing (arXiv 2412.19437, section 2.1.2), bias_e += u * sign(mean
  /// load - load_e) with the loads of the whole step, summed over the dp group, so that every
  /// replica (and every plan of the same global batch) takes the same step.
  void end_step(Communicator* dp) override {
    std::vector<const ParameterView*> biases;
    for (const ParameterView& v : views_)
      if (!v.trained) biases.push_back(&v);
    if (biases.empty()) return;
    const std::size_t E = static_cast<std::size_t>(dims_.moe->experts);
    std::vector<float> loads(biases.size() * E, 0.0f);  // token counts: exact below 2^24
    for (std::size_t i = 0; i < biases.size(); ++i) {
      const auto it = moe_context_.step_loads.find(biases[i]->value.data);
      if (it != moe_context_.step_loads.end())
        std::copy(it->second.begin(), it->second.end(), loads.begin() + i * E);
    }
    moe_context_.step_loads.clear();
    if (dp != nullptr) {  // summed in backend memory (device buffers for NCCL)
      reuse_or_allocate(host_staging_, *backend_, loads.size(), DType::fp32);
      backend_->upload(host_staging_.slice(0, loads.size()), loads.data(), Stream::compute);
      backend_->synchronize(Stream::compute);
      dp->all_reduce_sum(host_staging_.view().as<float>(), loads.size());
      backend_->download(loads.data(), host_staging_.slice(0, loads.size()), Stream::compute);
      backend_->synchronize(Stream::compute);
    }
    const float rate = static_cast<float>(dims_.moe->bias_update_rate);
    std::vector<float> bias(E);
    for (std::size_t i = 0; i < biases.size(); ++i) {
      const float* load = loads.data() + i * E;
      double mean = 0;
      for (std::size_t e = 0; e < E; ++e) mean += load[e];
      mean /= static_cast<double>(E);
      backend_->download(bias.data(), biases[i]->value, Stream::compute);
      backend_->synchronize(Stream::compute);
      for (std::size_t e = 0; e < E; ++e)
        bias[e] += rate * static_cast<float>((mean > load[e]) - (mean < load[e]));
      backend_->upload(biases[i]->value, bias.data(), Stream::compute);
      backend_->synchronize(Stream::compute);  // `bias` is refilled next
    }
  }

 private:
  /// The backward of a micro-batch, its linears' weight gradients at once or deferred as
  /// weight_gradients_ says. `report_layers`: call layer_backward_done after each layer (a
  /// whole backward; a split one reports them in its weight pass).
  void backward_pass(int micro_batch, const float* output_gradient, float* input_gradient,
                     double loss_scale, bool report_layers) {
    auto layer_done = [&](int layer) {
      if (report_layers) layer_backward_done(layer);
    };
    auto it = in_flight_.find(micro_batch);
    WHALE_CHECK(it != in_flight_.end(), "StageModule::backward: micro-batch " +
                                            std::to_string(micro_batch) +
                                            " has no forward in flight");
    State& s = it->second;
    moe_context_.loss_scale = loss_scale;  // the auxiliary loss's gradient scales with it
    const std::size_t nc = rows(s) * static_cast<std::size_t>(dims_.channels);
    Tensor dx(*backend_, held(s), act_);
    if (has_head_) {
      weight_gradients_.set_layer(dims_.layers + 1);
      backend_->fill_zero(dx, Stream::compute);  // head_backward adds to it
      timed_layer(dims_.layers + 1, true, report_layers, [&] { head_backward(s, dx, loss_scale); });
      layer_done(dims_.layers + 1);
    } else {
      const TensorView dx_all = region_.all_rows(dx, border_, nc);
      upload_floats(dx_all, output_gradient);
      region_.keep_held_rows(dx_all, dx);
    }
    const bool full = options_.recompute == plan::Recompute::full;
    for (std::size_t k = blocks_.size(); k-- > 0;) {
      // Full recomputation redoes the block's forward into the one block's worth of scratch
      // activations that every forward of this stage writes (dropped_), so it holds one
      // block's activations at any time; otherwise the micro-batch kept its own, and they are
      // kept after the backward for the next forward (the peak, all blocks', is the same).
      BlockActivations& activations = full ? dropped_ : s.blocks[k];
      if (full) {
        reuse_or_allocate(recomputed_output_, *backend_, held(s), act_);
        blocks_[k].forward(s.samples, s.xs[k], recomputed_output_, activations, true, s.draw);
      }
      reuse_or_allocate(dx_spare_, *backend_, held(s), act_);  // overwritten by the block
      weight_gradients_.set_layer(first_block_ + static_cast<int>(k));
      timed_layer(first_block_ + static_cast<int>(k), true, report_layers,
                  [&] { blocks_[k].backward(s.samples, s.xs[k], dx, dx_spare_, activations, s.draw); });
      std::swap(dx, dx_spare_);
      layer_done(first_block_ + static_cast<int>(k));
    }
    if (has_embedding_) {
      timed_layer(0, true, report_layers, [&] {
        embedding_dropout_.apply(*backend_, dx, static_cast<int>(rows(s)), s.draw,
                                 DropoutPlace::embedding_output);
        ends_.embedding_backward(*backend_, region_.enter(dx, border_), s.inputs, s.samples);
      });
      layer_done(0);
    } else {
      download_floats(input_gradient, region_.enter(dx, border_));
    }
    spare_.push_back(std::move(s));  // its buffers serve a later forward
    in_flight_.erase(it);
  }

  /// Runs `run`, one pass of model layer `layer`; with layer timing asked for and `wanted`,
  /// between two synchronizations of the compute stream, and reports its seconds less those
  /// of the tensor group's collectives and the expert group's exchanges inside it.
  template <class Run>
  void timed_layer(int layer, bool backward, bool wanted, Run run) {
    if (!wanted || !layer_timing()) {
      run();
      return;
    }
    backend_->synchronize(Stream::compute);
    const double communication_s = region_.communication_s() + moe_context_.exchange_s;
    const auto start = std::chrono::steady_clock::now();
    run();
    backend_->synchronize(Stream::compute);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    report_layer_time(layer, backward, seconds - (region_.communication_s() +
                                                  moe_context_.exchange_s - communication_s));
  }

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

  std::size_t rows(const State& s) const {
    return static_cast<std::size_t>(s.samples) * dims_.sequence;
  }
  /// Elements of a block input or output this tp rank holds: (Nh, C).
  std::size_t held(const State& s) const {
    return static_cast<std::size_t>(region_.held_rows(static_cast<int>(rows(s)))) *
           dims_.channels;
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
    Family::validate_tp(model, dims_, o.tp_size);
    if (dims_.moe) validate_experts(file);
    if (o.sequence_parallel && dims_.sequence % o.tp_size != 0)
      throw Error(file, "sequence",
                  "a sequence divisible by the tensor-parallel degree " +
                      std::to_string(o.tp_size) + " under sequence parallelism, got " +
                      std::to_string(dims_.sequence),
                  "choose a tp degree that divides the sequence, or turn sequence_parallel off");
  }

  /// whale-run's mixture-of-experts stages: ep dividing the experts; the experts' width
  /// divisible by tp and expert_tp, and expert_tp dividing tp or a multiple of it (with its
  /// gather group above tp).
  void validate_experts(const std::string& file) const {
    const auto& o = options_;
    for (int degree : {o.tp_size, expert_tp_size()})
      if (degree > 1 && dims_.moe->expert_ffn_hidden % degree != 0)
        throw Error(file, "moe.expert_ffn_hidden",
                    "an expert width divisible by the tensor-parallel degree " +
                        std::to_string(degree) + ", got " +
                        std::to_string(dims_.moe->expert_ffn_hidden),
                    "choose a tp and expert_tp that divide expert_ffn_hidden");
    if (o.ep_size < 1 || o.ep_rank < 0 || o.ep_rank >= o.ep_size ||
        (o.expert_counts.empty() && dims_.moe->experts % o.ep_size != 0))
      throw Error(file, "ep",
                  "an expert-parallel degree dividing experts " +
                      std::to_string(dims_.moe->experts) + ", got ep " + std::to_string(o.ep_size));
    const int etp = expert_tp_size();
    if (etp < 1 || (o.tp_size % etp != 0 && etp % o.tp_size != 0) || expert_tp_rank() < 0 ||
        expert_tp_rank() >= etp)
      throw Error(file, "expert_tp",
                  "an expert tensor-parallel degree dividing tp " + std::to_string(o.tp_size) +
                      " or a multiple of it, got " + std::to_string(etp),
                  "use expert_tp 1, a divisor or multiple of tp, or leave it out");
    if (o.ep_size > 1 && o.ep == nullptr)
      throw std::invalid_argument("BlockStage: ep " + std::to_string(o.ep_size) +
                                  " needs an expert-parallel communicator");
    const bool gather_missing =
        o.expert_gather == nullptr || o.expert_gather->size() != etp / o.tp_size;
    if (etp > o.tp_size && gather_missing)
      throw std::invalid_argument("BlockStage: expert_tp " + std::to_string(etp) + " over tp " +
                                  std::to_string(o.tp_size) +
                                  " needs an expert-token-gather communicator of " +
                                  std::to_string(etp / o.tp_size) + " ranks");
  }

  /// The model's index of this tp rank's first query head.
  static int first_head(const plan::Model& model, const StageModuleOptions& options) {
    return options.tp_rank * (model.heads / std::max(options.tp_size, 1));
  }

  /// The routed experts' tensor-parallel degree (StageModuleOptions::expert_tp_size).
  int expert_tp_size() const {
    return options_.expert_tp_size > 0 ? options_.expert_tp_size : options_.tp_size;
  }
  /// This rank's place in its expert-tp group (StageModuleOptions::expert_tp_rank).
  int expert_tp_rank() const {
    return options_.expert_tp_size > 0 ? options_.expert_tp_rank : options_.tp_rank;
  }

  /// Whether this expert-parallel member holds routed expert `expert` (-1: not an expert's).
  bool holds_expert(int expert) const {
    if (expert < 0) return true;
    return moe_context_.owners.owner(expert) == options_.ep_rank;
  }

  /// One flat fp32 value (master) tensor, one flat fp32 gradient tensor and, for a 16-bit
  /// compute dtype, one flat copy of the values in it; each parameter is the shard of the full
  /// tensor initialised from (seed, name), so a tied copy in another stage starts equal.
  void create_parameters() {
    struct Shard {
      ParameterSpec spec;
      TensorShard layout;
      int layer;
    };
    std::vector<Shard> shards;
    std::size_t total = 0;
    for (int layer = options_.first_layer; layer < options_.end_layer; ++layer)
      for (const ParameterSpec& spec : Family::layer_parameters(dims_, layer)) {
        // A tied parameter listed by two layers of this stage is held once, by the first.
        if (std::any_of(shards.begin(), shards.end(),
                        [&](const Shard& held) { return held.spec.name == spec.name; }))
          continue;
        if (!holds_expert(spec.expert)) continue;  // another ep member's routed expert
        // A routed expert is split over its expert-tp group, everything else over the tensor group.
        const TensorShard layout =
            spec.expert >= 0
                ? gpt::shard_layout(spec, expert_tp_rank(), expert_tp_size())
                : gpt::shard_layout(spec, options_.tp_rank, options_.tp_size);
        shards.push_back({spec, layout, layer});
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
      gpt::initialize_full(spec, options_.seed, full.data(), options_.init_threads);
      extract_shard(layout, full.data(), shard.data());
      backend_->upload(values_.slice(offset, shard.size()), shard.data(), Stream::compute);
      backend_->synchronize(Stream::compute);  // `shard` is refilled next
      views_.push_back({spec.name, values_.slice(offset, shard.size()),
                        gradients_.slice(offset, shard.size()), shard.size(),
                        layout.replicated(), layer, spec.expert >= 0, spec.trained, spec.cols > 1});
      offset += shard.size();
    }
    parameters_updated();
    ends_.bind(dims_, [&](const std::string& name) {
      for (const ParameterView& v : views_)
        if (v.name == name) return param(v);
      return Param{};
    });
  }

  /// The compute-dtype value of a parameter (its master under fp32, and for untrained state)
  /// and its gradient.
  Param param(const ParameterView& v) const {
    if (compute_values_.empty() || !v.trained) return {v.value, v.gradient};
    const std::size_t offset =
        (static_cast<const char*>(v.value.data) - static_cast<const char*>(values_.view().data)) /
        sizeof(float);
    return {compute_values_.slice(offset, v.count), v.gradient};
  }

  typename Family::BlockParams block_params(int layer) const {
    std::vector<Param> p;
    for (const ParameterSpec& spec : Family::layer_parameters(dims_, layer))
      for (const ParameterView& v : views_)
        if (v.name == spec.name) p.push_back(param(v));
    return Family::block_params(dims_, layer, p);
  }

  /// Whether the token table and the LM head are split over the tensor ranks by vocabulary.
  bool vocabulary_parallel() const { return options_.tp_size > 1; }

  /// `tokens` as the stage's backends take them: rows of this rank's vocabulary slice when
  /// vocabulary-parallel, themselves otherwise.
  std::vector<int32_t> vocabulary_rows(const std::vector<int32_t>& tokens) const {
    if (!vocabulary_parallel()) return tokens;
    return shard_token_rows(tokens, dims_.vocabulary, vocabulary_);
  }

  /// Final norm, LM head, summed cross-entropy of the micro-batch. Vocabulary-parallel, the
  /// head computes this rank's slice of the logits only. Under sequence parallelism the norm
  /// runs on the held rows, which the head's GEMM gathers (into border_, again in the
  /// backward), as Megatron-LM's sequence-parallel head does: the micro-batch keeps the held
  /// rows' norm only.
  double head_forward(State& s) {
    const int n = static_cast<int>(rows(s)), C = dims_.channels, V = vocabulary_.count;
    ends_.head_norm_forward(*backend_, s.head, s.xs.back(), region_.held_rows(n));
    reuse_or_allocate(s.logits, *backend_, rows(s) * V, act_);
    backend_->linear_forward(s.logits, region_.enter(s.head.norm, border_),
                             ends_.head_weight().value, ConstTensorView{}, n, C, V);
    if (!vocabulary_parallel()) return backend_->cross_entropy_forward(s.logits, s.targets, n, V);
    return vocabulary_parallel_loss(s);
  }

  /// The summed loss from every rank's slice: each rank's softmax statistics go into its slot
  /// of a zeroed (tp, N, 4) tensor, one all-reduce gathers them, and the host combines them
  /// into the loss and each row's log-sum-exp (kept for the backward).
  double vocabulary_parallel_loss(State& s) {
    const int n = static_cast<int>(rows(s));
    const std::size_t slot = rows(s) * kShardStatisticsFloats;
    reuse_or_allocate(shard_statistics_, *backend_, slot * options_.tp_size, DType::fp32);
    backend_->fill_zero(shard_statistics_, Stream::compute);
    backend_->cross_entropy_shard_statistics(s.logits, s.targets, n, vocabulary_.count,
                                             shard_statistics_.slice(slot * options_.tp_rank, slot));
    region_.all_reduce(shard_statistics_);  // adds zeros to every other slot: exact
    std::vector<float> gathered(shard_statistics_.count());
    backend_->download(gathered.data(), shard_statistics_, Stream::compute);
    backend_->synchronize(Stream::compute);
    std::vector<float> log_sum_exp;
    const double loss = combine_shard_statistics(gathered, options_.tp_size, n, &log_sum_exp);
    reuse_or_allocate(s.log_sum_exp, *backend_, log_sum_exp.size(), DType::fp32);
    backend_->upload(s.log_sum_exp, log_sum_exp.data(), Stream::compute);
    backend_->synchronize(Stream::compute);
    return loss;
  }

  void drop_head_activations(State& s) {
    s.head = HeadActivations{};
    s.logits.reset();
    s.log_sum_exp.reset();
  }

  /// dx (Nh, C) += gradient of loss_scale * summed loss w.r.t. the head input's held rows.
  void head_backward(State& s, TensorView dx, double loss_scale) {
    if (s.logits.empty()) head_forward(s);  // full recomputation
    const int n = static_cast<int>(rows(s)), C = dims_.channels, V = vocabulary_.count;
    const int held_rows = region_.held_rows(n);
    Tensor dnorm(*backend_, rows(s) * C, act_);
    // The logits are not read after this: their gradient overwrites them (one (N, V) tensor).
    if (vocabulary_parallel())
      backend_->cross_entropy_shard_backward_in_place(s.logits, s.targets, s.log_sum_exp, n, V,
                                                      loss_scale);
    else
      backend_->cross_entropy_backward_in_place(s.logits, s.targets, n, V, loss_scale);
    const Param head = ends_.head_weight();
    weight_gradients_.linear_backward(dnorm, head.value, head.grad, TensorView{}, s.logits,
                                      region_.enter(s.head.norm, border_), n, C, V);
    // Each rank's slice of the vocabulary gave part of the head input's gradient: summed over
    // the group into the held rows (in place unless sequence-parallel).
    Tensor dnorm_held;
    TensorView dnorm_rows = dnorm;
    if (region_.sequence_parallel()) {
      dnorm_held = Tensor(*backend_, held(s), act_);
      dnorm_rows = dnorm_held;
    }
    if (vocabulary_parallel()) region_.leave(dnorm, dnorm_rows);
    const std::vector<TensorView> norm_gradients = ends_.head_norm_gradients();
    region_.begin_held_row_gradients(norm_gradients);
    ends_.head_norm_backward(*backend_, dx, dnorm_rows, s.xs.back(), s.head, held_rows);
    region_.end_held_row_gradients(norm_gradients);
  }

  Dims dims_;
  StageModuleOptions options_;
  Backend* backend_;
  DType act_;  // the compute dtype of activations and compute weights
  bool has_embedding_ = false, has_head_ = false;
  VocabularyShard vocabulary_;  // this rank's rows of the token table and the LM head
  Tensor shard_statistics_;     // (tp, N, 4) fp32: every rank's softmax statistics
  int first_block_ = 1, end_block_ = 1;  // model layers of the blocks held
  Tensor values_, gradients_;  // fp32 masters and gradients, flat
  Tensor compute_values_;      // the values in act_; empty under fp32 (the masters serve)
  Tensor host_staging_;        // fp32 scratch between act_ and host floats
  TensorParallelRegion region_;  // the tp group's borders; built before blocks_ refer to it
  LayerDropout embedding_dropout_;  // the embedding's output
  Tensor border_;  // (N, C) whole tensors at the stage borders under sequence parallelism
  std::vector<ParameterView> views_;
  Ends ends_;  // the family's embedding and head
  std::vector<Block> blocks_;
  std::map<int, State> in_flight_;
  /// Finished micro-batches whose buffers the next forwards reuse (no fresh zero-filled memory
  /// per step); scratch activations of full recomputation.
  std::vector<State> spare_;
  BlockActivations dropped_;
  Tensor recomputed_output_, dx_spare_;
  MoeContext moe_context_;  // the experts' layout; its loss_scale set by each backward
  BlockScratch block_scratch_;  // shared by blocks_ (they run one at a time)
  WeightGradients weight_gradients_;  // the linears' weight gradients, shared by blocks_ and head
};

}  // namespace whale::exec

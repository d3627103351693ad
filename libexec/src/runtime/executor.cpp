// File: executor.cpp
// Executor: construction (modules and communicators from the plan), the step loop that
// interprets the group's schedule program, and forward/backward compute.
#include "whale/exec/runtime/executor.h"

#include <algorithm>
#include <string>

#include "runtime/executor_impl.h"
#include "runtime/executor_optimizer.h"
#include "runtime/expert_groups.h"
#include "runtime/mixed_tp_packing.h"
#include "whale/exec/backend/backend_factory.h"
#include "whale/exec/runtime/rank_communicators.h"
#include "whale/plan/error.h"
#include "whale/plan/gradient_buckets.h"

namespace whale::exec {
namespace {

using Clock = std::chrono::steady_clock;

/// Consecutive stages on one group pass activations in memory, so replica r of one must be
/// replica r of the other with the same samples.
void check_local_boundaries(const plan::Plan& plan) {
  for (std::size_t s = 1; s < plan.stages.size(); ++s) {
    if (plan.group_of_stage(static_cast<int>(s)) != plan.group_of_stage(static_cast<int>(s) - 1))
      continue;
    const plan::Stage& a = plan.stages[s - 1];
    const plan::Stage& b = plan.stages[s];
    if (a.devices != b.devices || a.tp != b.tp || a.replica_tps != b.replica_tps ||
        a.shares != b.shares)
      throw Error(plan.source_file, "stages[" + std::to_string(s) + "]",
                  "the same devices, tp and shares as stages[" + std::to_string(s - 1) +
                      "], which runs on the same device group",
                  "stages that share a group pass activations in memory");
  }
}

/// The backend this rank needs: the plan's device (its profile's kind and slowdown), or the
/// CPU when the run asks for one; the plan's precision; the run's thread count.
BackendRequest backend_request(const plan::Plan& plan, int device,
                               const ExecutorOptions& options) {
  const plan::DeviceProfile& profile = plan.cluster.profile_of(device);
  BackendRequest request;
  request.plan_file = plan.source_file;
  request.device_kind = options.cpu_device ? "cpu" : profile.kind;
  request.device_name = profile.name;
  request.local_gpu = options.local_gpu >= 0 ? options.local_gpu
                                             : plan.cluster.devices.at(device).local_index;
  request.arena_bytes = options.arena_bytes;
  request.precision = plan.precision;
  request.threads = options.threads;
  request.slowdown_factor = profile.slowdown_factor;
  return request;
}

}  // namespace

int Executor::Impl::samples(int s) const {
  return plan.stages[s].shares[stages.at(s).role.replica];
}

Executor::Executor(const plan::Plan& plan, const RankLayout& layout, Communicator& world,
                   PeerTransport& transport, const ExecutorOptions& options)
    : impl_(std::make_unique<Impl>(plan, layout, world, transport, options)) {
  check_local_boundaries(plan);
  validate_expert_layout(plan);
  Impl& im = *impl_;
  im.rank = world.rank();
  im.device = layout.device_of_rank(im.rank);
  im.program = plan::generate_schedule(plan).groups.at(layout.group_of_rank(im.rank));
  const BackendRequest request = backend_request(plan, im.device, options);
  im.backend = make_backend(request);

  // This rank's tensor, data and tied-embedding groups, in rank_groups' global order (each by
  // its members only, so creation cannot deadlock), over the transport their members' devices
  // call for; pipeline and bridge pairs go through the PeerTransport. A stage's tp or dp group
  // of one rank has no communicator (null).
  const std::vector<DeviceKind> kinds = rank_device_kinds(plan, layout, options.cpu_device);
  std::unique_ptr<GroupCommunicatorFactory> world_factory;
  GroupCommunicatorFactory* factory = options.group_factory;
  if (!factory) {
    const bool gpu = kinds.at(im.rank) == DeviceKind::gpu;
    world_factory = make_world_group_factory(
        gpu ? request.local_gpu : -1, gpu ? im.backend->native_stream(Stream::compute) : nullptr);
    factory = world_factory.get();
  }
  std::map<int, std::vector<std::unique_ptr<Communicator>>> expert_groups;  // by stage
  for (const RankGroup& g : rank_groups(plan, layout, kinds, im.rank)) {
    if (g.purpose == GroupPurpose::tied_embedding)
      im.tied_group = factory->make(g);
    else if (g.purpose == GroupPurpose::expert_parallel || g.purpose == GroupPurpose::expert_data ||
             g.purpose == GroupPurpose::expert_token_gather)
      expert_groups[g.stage].push_back(factory->make(g));
    else
      im.groups[g.ranks] = factory->make(g);
  }
  auto group_for = [&](const std::vector<int>& members) -> Communicator* {
    auto it = im.groups.find(members);
    return it == im.groups.end() ? nullptr : it->second.get();
  };
  for (int s = 0; s < static_cast<int>(plan.stages.size()); ++s) {
    const plan::Stage& stage = plan.stages[s];
    // dp_groups: per finest piece its holders' group (per tp rank without replica_tp), then
    // for a mixed-tp stage the group of all its ranks (mixed_tp_packing.h).
    std::vector<Communicator*> tp_groups, dp_groups;
    for (int r = 0; r < stage.dp(); ++r) tp_groups.push_back(group_for(layout.tp_group(s, r)));
    for (int t = 0; t < stage.tp; ++t) dp_groups.push_back(group_for(layout.dp_group(s, t)));
    if (stage.mixed_tp() && stage.dp() > 1) dp_groups.push_back(group_for(layout.stage_ranks(s)));
    for (const StageRole& role : layout.roles(im.rank)) {
      if (role.stage != s) continue;
      StageState& state = im.stages[s];
      state.role = role;
      state.tp = tp_groups[role.replica];
      // A mixed-tp stage has no data-parallel group of one tp rank: its reducer sums pieces.
      state.dp = stage.mixed_tp() ? nullptr : dp_groups[role.tp_rank];
      StageModuleOptions module_options;
      module_options.first_layer = stage.first_layer;
      module_options.end_layer = stage.end_layer;
      module_options.tp_rank = role.tp_rank;
      module_options.tp_size = stage.replica_tp(role.replica);
      module_options.recompute = stage.recompute;
      module_options.sequence_parallel = stage.sequence_parallel;
      module_options.seed = options.seed;
      module_options.init_threads = options.threads;
      if (plan.model.moe && separate_expert_layout(stage)) {  // validate_expert_layout
        const int index = stage.index_of(im.device);
        for (const RankGroup& g : expert_layout_groups(plan, layout, kinds, s, im.rank)) {
          std::unique_ptr<Communicator>& made = expert_groups[s].front();
          (g.purpose == GroupPurpose::expert_parallel ? state.ep
           : g.purpose == GroupPurpose::expert_data   ? state.expert_dp
                                                      : state.expert_gather) = std::move(made);
          expert_groups[s].erase(expert_groups[s].begin());
        }
        module_options.ep_rank = stage.ep_rank_of(index);
        module_options.ep_size = stage.ep;
        module_options.expert_tp_size = stage.expert_tp_degree();
        module_options.expert_tp_rank = index % stage.expert_tp_degree();
        module_options.expert_counts = stage.expert_counts;
        module_options.ep = state.ep.get();
        module_options.expert_gather = state.expert_gather.get();
      }
      state.module = make_stage_module(plan.model, module_options, *im.backend, state.tp);
      if (options.record_layer_times) {
        state.module->set_layer_timed([&im, s](int layer, bool backward, double seconds) {
          const plan::Stage& st = im.plan.stages[s];
          im.layer_times.push_back({im.current_step, im.plan.cluster.devices.at(im.device).model,
                                    im.plan.model.layers.at(layer).kind,
                                    st.replica_tp(im.stage(s).role.replica), im.samples(s), backward,
                                    seconds});
        });
      }
      state.input_floats = state.module->input_floats_per_sample();
      state.output_floats = state.module->output_floats_per_sample();
      OptimizerConfig optimizer;
      optimizer.kind = optimizer_kind(plan.model.training.optimizer);
      optimizer.adamw.learning_rate = optimizer.sgd.learning_rate = options.learning_rate;
      optimizer.adamw.weight_decay = optimizer.sgd.weight_decay = options.weight_decay;
      optimizer.sgd.momentum = options.momentum;
      const bool separate_experts = plan.model.moe && separate_expert_layout(stage);
      state.optimizer = std::make_unique<StageOptimizer>(
          *im.backend, state.module->parameters(), state.dp, stage.shard_optimizer, optimizer,
          separate_experts, state.expert_dp.get());
      if (stage.mixed_tp() && stage.dp() > 1) {
        const std::vector<plan::GradientBucket> buckets = plan::gradient_buckets(plan, s);
        state.reducer = std::make_unique<GradientReducer>(
            *im.backend, state.module->parameters(), buckets,
            mixed_tp_packing(plan.model, stage, role, state.module->parameters(), buckets),
            dp_groups);
      } else if (state.dp || (separate_experts && state.expert_dp)) {
        // At dp 1 with experts replicated (expert_dp > 1) only the experts' runs are reduced.
        state.reducer = std::make_unique<GradientReducer>(
            state.module->parameters(), plan::gradient_buckets(plan, s), state.dp,
            stage.shard_gradients, separate_experts ? state.expert_dp.get() : state.dp);
      }
    }
  }
  // This rank's copies of the tied token table: one, summed over the tied group made above, or
  // both, where the two stages share its devices (no group, or under ZeRO-2 their dp group).
  std::vector<TiedCopy> copies;
  Communicator* tied_group = im.tied_group.get();
  for (int s : tied_embedding_stages(plan)) {
    if (!im.local(s)) continue;
    StageState& state = im.stage(s);
    const plan::Stage& stage = plan.stages[s];
    for (const ParameterView& p : state.module->parameters())
      if (p.name == kTokenTable) {
        const auto [owned_begin, owned_end] = tied_sum_range(
            stage.shard_gradients, state.role.replica, p.count,
            stage.shard_gradients ? state.optimizer->slice_of(p) : std::pair<std::size_t, std::size_t>{});
        copies.push_back({p, tied_table_first(plan.model, state.role.tp_rank, stage.replica_tp(state.role.replica)),
                          owned_begin, owned_end});
        if (stage.shard_gradients && !tied_group) tied_group = state.dp;
      }
    im.tied_stages.push_back(s);
  }
  if (!copies.empty())
    im.tied = std::make_unique<TiedEmbedding>(
        *im.backend, tied_group, std::move(copies),
        static_cast<std::size_t>(plan.model.vocabulary) * static_cast<std::size_t>(plan.model.hidden),
        plan.tied_table_copies_split_alike());
  // reduce_bucket(s, 0) directly follows the last backward (or backward_weight) of s
  // (schedule_program.h).
  const auto& code = im.program.instructions;
  for (std::size_t i = 1; i < code.size(); ++i)
    if (code[i].kind == plan::InstructionKind::reduce_bucket && code[i].bucket == 0)
      im.stage(code[i].stage).last_backward_mb = code[i - 1].micro_batch;
}

Executor::~Executor() = default;

double Executor::train_step(const DataLoader& loader, int64_t step) {
  Impl& im = *impl_;
  timeline_.clear();
  im.timeline = impl_->options.record_timeline ? &timeline_ : nullptr;
  if (im.timeline) im.transport.barrier();  // a common origin for every rank's events
  im.step_start = Clock::now();
  im.current_step = step;
  im.reductions_waited.clear();
  im.tied_summed = false;
  im.loss_sum = 0;
  for (auto& entry : im.stages) entry.second.module->zero_gradients();
  for (const plan::Instruction& instruction : im.program.instructions)
    im.execute(instruction, loader, step);
  im.transport.wait_sends();
  im.finish_deferred_steps();
  im.inputs.clear();
  im.outputs.clear();
  im.output_grads.clear();
  im.input_grads.clear();
  std::vector<double> loss = {im.loss_sum};
  im.transport.sum(loss);
  const double tokens = static_cast<double>(im.plan.global_batch()) * im.plan.model.sequence;
  return loss[0] / tokens;
}

int64_t Executor::skipped_steps() const { return impl_->scaler.skipped_steps(); }

double Executor::loss_scale() const { return impl_->scaler.scale(); }

double Executor::grad_norm() const { return impl_->grad_norm; }

const std::vector<LayerTimeSample>& Executor::layer_time_samples() const { return impl_->layer_times; }

std::string Executor::device_name() const { return impl_->backend->name(); }

std::size_t Executor::peak_memory_bytes() const { return impl_->backend->peak_memory_bytes(); }

void Executor::Impl::execute(const plan::Instruction& in, const DataLoader& loader,
                             int64_t step) {
  using K = plan::InstructionKind;
  switch (in.kind) {
    case K::recv_activation: return recv_activation(in.stage, in.micro_batch);
    case K::forward: return forward(in.stage, in.micro_batch, loader, step);
    case K::send_activation: return send_activation(in.stage, in.micro_batch);
    case K::recv_gradient: return recv_gradient(in.stage, in.micro_batch);
    case K::backward: return backward(in.stage, in.micro_batch, false);
    case K::backward_input: return backward(in.stage, in.micro_batch, true);
    case K::backward_weight: return backward_weight(in.stage, in.micro_batch);
    case K::send_gradient: return send_gradient(in.stage, in.micro_batch);
    case K::reduce_bucket: return reduce_bucket(in.stage, in.bucket);
    case K::wait_reductions: return wait_reductions(in.stage);
    case K::optimizer_step: return optimizer_step(in.stage);
  }
}

void Executor::Impl::forward(int s, int mb, const DataLoader& loader, int64_t step) {
  StageState& st = stage(s);
  const int n = samples(s);
  const MicroBatchTokens tokens =
      loader.micro_batch(step, mb, plan.stages[s].first_sample(st.role.replica), n);
  std::vector<float> input;
  if (st.input_floats > 0) {
    // From the previous stage on this group, or as received by recv_activation.
    auto& source = local(s - 1) ? outputs : inputs;
    input = std::move(source.at({local(s - 1) ? s - 1 : s, mb}));
    source.erase({local(s - 1) ? s - 1 : s, mb});
  }
  std::vector<float>& output = outputs[{s, mb}];
  output.assign(static_cast<std::size_t>(n) * st.output_floats, 0.0f);
  const auto start = Clock::now();
  const double loss = st.module->forward(mb, tokens, input.data(), output.data());
  record("compute", "F s" + std::to_string(s) + " mb" + std::to_string(mb), s, mb, start);
  if (st.output_floats == 0) outputs.erase({s, mb});
  if (st.role.tp_rank == 0) loss_sum += loss;
}

void Executor::Impl::backward(int s, int mb, bool input_pass) {
  StageState& st = stage(s);
  const int n = samples(s);
  std::vector<float> output_grad;
  if (st.output_floats > 0) {
    auto& source = local(s + 1) ? input_grads : output_grads;
    const BufferKey key = {local(s + 1) ? s + 1 : s, mb};
    output_grad = std::move(source.at(key));
    source.erase(key);
  }
  std::vector<float>* input_grad = nullptr;
  if (st.input_floats > 0) {
    input_grad = &input_grads[{s, mb}];
    input_grad->assign(static_cast<std::size_t>(n) * st.input_floats, 0.0f);
  }
  const double loss_scale =
      scaler.scale() / (static_cast<double>(plan.global_batch()) * plan.model.sequence);
  const float* out = output_grad.empty() ? nullptr : output_grad.data();
  float* in = input_grad ? input_grad->data() : nullptr;
  const auto start = Clock::now();
  if (input_pass) {  // reports no layer: the weight pass completes the gradients
    st.module->backward_input(mb, out, in, loss_scale);
  } else {
    with_layer_done(s, mb, [&] { st.module->backward(mb, out, in, loss_scale); });
  }
  record("compute", "B s" + std::to_string(s) + " mb" + std::to_string(mb), s, mb, start);
}

void Executor::Impl::backward_weight(int s, int mb) {
  StageModule& module = *stage(s).module;
  const auto start = Clock::now();
  with_layer_done(s, mb, [&] { module.backward_weight(mb); });
  record("compute", "W s" + std::to_string(s) + " mb" + std::to_string(mb), s, mb, start);
}

void Executor::Impl::with_layer_done(int s, int mb, const std::function<void()>& pass) {
  StageState& st = stage(s);
  const bool last = st.reducer && mb == st.last_backward_mb;
  st.module->set_layer_done([this, s, last](int layer) { layer_done(s, layer, last); });
  pass();
  st.module->set_layer_done(nullptr);
}

void Executor::Impl::record(const char* lane, const std::string& name, int s, int mb,
                            Clock::time_point start) {
  if (timeline) record(lane, name, s, mb, start, Clock::now());
}

void Executor::Impl::record(const char* lane, const std::string& name, int s, int mb,
                            Clock::time_point start, Clock::time_point end) {
  if (!timeline) return;
  plan::TimelineEvent event;
  event.device = device;
  event.lane = lane;
  event.name = name;
  event.stage = s;
  event.micro_batch = mb;
  event.start_s = std::chrono::duration<double>(start - step_start).count();
  event.duration_s = std::chrono::duration<double>(end - start).count();
  timeline->push_back(event);
}

}  // namespace whale::exec

// File: executor_update.cpp
// Executor: gradient bucket and optimizer instructions, checkpoint state, and the full
// parameters gathered to rank 0.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "runtime/executor_impl.h"
#include "runtime/executor_optimizer.h"
#include "runtime/tied_embedding.h"
#include "whale/exec/runtime/gradient_clipping.h"
#include "whale/exec/model/tensor_shard.h"
#include "whale/plan/check.h"

namespace whale::exec {

void Executor::Impl::layer_done(int s, int layer, bool last_backward) {
  if (last_backward) stage(s).reducer->layer_done(layer);
  for (auto& entry : stages)
    if (entry.second.reducer) entry.second.reducer->progress();
}

void Executor::Impl::reduce_bucket(int s, int bucket) {
  // Normally started from within the backward already (layer_done); this is the latest point.
  stage(s).reducer->start_through(bucket);
}

void Executor::Impl::wait_reductions(int s) {
  if (!reductions_waited.insert(s).second) return;
  GradientReducer& reducer = *stage(s).reducer;
  reducer.wait_all();
  for (int b = 0; b < reducer.buckets(); ++b)
    record("dp", "reduce_bucket s" + std::to_string(s) + " b" + std::to_string(b), s, -1,
           reducer.started(b), reducer.completed(b));
}

void Executor::Impl::optimizer_step(int s) {
  // The tied table's copies are summed before the first of their stages' optimizer steps here,
  // after the reductions of every stage of theirs (wait_reductions; the program orders a rank's
  // steps from its last stage down, so the first stage's comes later).
  if (tied && !tied_summed && std::count(tied_stages.begin(), tied_stages.end(), s) > 0) {
    for (int t : tied_stages)
      if (stage(t).reducer) wait_reductions(t);
    tied->sum_gradients();
    tied_summed = true;
  }
  if (defers_steps()) {  // finish_deferred_steps runs it
    deferred_steps.push_back(s);
    return;
  }
  update_parameters(s);
}

void Executor::Impl::update_parameters(int s) {
  StageOptimizer& optimizer = *stage(s).optimizer;
  const auto start = std::chrono::steady_clock::now();
  optimizer.step();
  record("optimizer", "optimizer s" + std::to_string(s), s, -1, start);
  if (optimizer.sharded()) {
    const auto gather_start = std::chrono::steady_clock::now();
    optimizer.share_parameters();
    record("dp", "allgather weights s" + std::to_string(s), s, -1, gather_start);
  }
  stage(s).module->end_step(stage(s).dp);
  stage(s).module->parameters_updated();
}

void Executor::Impl::finish_deferred_steps() {
  if (!defers_steps()) return;
  double unscale = 1.0;
  if (scaler.enabled()) {
    std::vector<double> overflow = {0.0};
    for (auto& entry : stages)
      for (const ParameterView& p : entry.second.module->parameters())
        if (backend->has_non_finite(p.gradient)) overflow[0] = 1.0;
    transport.sum(overflow);
    unscale = 1.0 / scaler.scale();
    if (!scaler.update(overflow[0] == 0.0)) {  // skipped: no update, no norm
      deferred_steps.clear();
      grad_norm = -1;
      return;
    }
  }
  double factor = unscale;
  if (options.clip_grad > 0) {
    std::vector<double> square_sum = {gradient_square_sum()};
    transport.sum(square_sum);
    grad_norm = std::sqrt(square_sum[0]) * unscale;
    factor *= clip_coefficient(grad_norm, options.clip_grad);
  }
  for (int s : deferred_steps) {
    if (factor != 1.0)
      for (const ParameterView& p : stage(s).module->parameters()) backend->scale(p.gradient, factor);
    update_parameters(s);
  }
  deferred_steps.clear();
}

double Executor::Impl::gradient_square_sum() const {
  const std::vector<int> tied_at = tied_embedding_stages(plan);
  const int table_stage = tied_at.empty() ? -1 : *std::min_element(tied_at.begin(), tied_at.end());
  double sum = 0;
  for (const auto& entry : stages) {
    const int s = entry.first;  // a plain name: lambdas below capture it
    const StageState& st = entry.second;
    const plan::Stage& stage = plan.stages.at(s);
    const int index = stage.index_of(device);
    const int expert_tp = stage.expert_tp_degree();
    const bool expert_replica_zero = index < stage.ep * expert_tp;
    const StageRole role = st.role;
    // As gather_parameters writes each element once: a tensor-parallel copy on tp rank 0 only,
    // the tied table in its first stage only; in a whole range the copy of replica 0 (a routed
    // expert's: of expert-dp replica 0).
    const auto counted = [&](const ParameterView& p) {
      const int tp_rank = p.expert_parallel ? index % expert_tp : role.tp_rank;
      if (p.tp_replicated && tp_rank != 0) return false;
      return table_stage < 0 || p.name != kTokenTable || s == table_stage;
    };
    const auto copy_counted = [&](const ParameterView& p) {
      return p.expert_parallel ? expert_replica_zero : role.replica == 0;
    };
    sum += st.optimizer->gradient_square_sum(counted, copy_counted);
  }
  return sum;
}

std::vector<float> Executor::save_state() const {
  std::vector<float> state;
  for (const auto& entry : impl_->stages) {
    const std::vector<float> part = entry.second.optimizer->save_state();
    state.insert(state.end(), part.begin(), part.end());
  }
  const LossScaler& scaler = impl_->scaler;
  if (scaler.enabled()) {  // a power of two and counts below 2^24: exact as floats
    state.push_back(static_cast<float>(scaler.scale()));
    state.push_back(static_cast<float>(scaler.good_steps()));
    state.push_back(static_cast<float>(scaler.skipped_steps()));
  }
  return state;
}

void Executor::load_state(const std::vector<float>& state) {
  std::size_t offset = 0;
  std::size_t end = state.size();
  if (impl_->scaler.enabled()) {
    if (end < 3) throw std::invalid_argument("executor state: no loss scaler state");
    end -= 3;
    impl_->scaler.restore(state[end], static_cast<int64_t>(state[end + 1]),
                          static_cast<int64_t>(state[end + 2]));
  }
  for (auto& entry : impl_->stages) {
    offset += entry.second.optimizer->load_state(state, offset);
    entry.second.module->parameters_updated();
  }
  if (offset != end)
    throw std::invalid_argument("executor state: this plan's stages take " + std::to_string(offset) +
                                " floats, the checkpoint holds " + std::to_string(end));
}

std::vector<FullParameter> Executor::gather_parameters() {
  // Each rank of replica 0 writes its shards as text, and each rank of expert-dp replica 0 its
  // routed experts' (every member of its expert-parallel group), "name tp_rank tp_size count"
  // then the values (%.9g: floats round-trip exactly), a routed expert's ranks its expert-tp
  // ones; rank 0 puts each shard into its full tensor.
  std::string text;
  char number[32];
  for (auto& entry : impl_->stages) {
    const StageState& st = entry.second;
    const plan::Stage& stage = impl_->plan.stages.at(entry.first);
    const int index = stage.index_of(impl_->device);
    const int expert_tp = stage.expert_tp_degree();
    const bool expert_writer = index < stage.ep * expert_tp;  // expert-dp replica 0
    for (const ParameterView& p : st.module->parameters()) {
      const bool routed = p.expert_parallel;
      const int tp_rank = routed ? index % expert_tp : st.role.tp_rank;
      const int tp_size = routed ? expert_tp : stage.replica_tp(st.role.replica);
      if (p.tp_replicated && tp_rank != 0) continue;
      if (routed ? !expert_writer : st.role.replica != 0) continue;
      text += p.name + ' ' + std::to_string(tp_rank) + ' ' + std::to_string(tp_size) + ' ' +
              std::to_string(p.count);
      std::vector<float> values(p.count);
      impl_->backend->download(values.data(), p.value, Stream::compute);
      impl_->backend->synchronize(Stream::compute);
      for (float value : values) {
        std::snprintf(number, sizeof(number), " %.9g", value);
        text += number;
      }
      text += '\n';
    }
  }
  std::map<std::string, std::vector<float>> full;
  for (const std::string& part : impl_->transport.gather_to_root(text)) {
    std::istringstream in(part);
    std::string name;
    int tp_rank = 0, tp_size = 1;
    std::size_t count = 0;
    while (in >> name >> tp_rank >> tp_size >> count) {
      std::vector<float> shard(count);
      for (float& v : shard) in >> v;
      const TensorShard layout = parameter_shard(impl_->plan.model, name, tp_rank, tp_size);
      WHALE_CHECK(layout.shard_count() == count,
                  "gather_parameters: " + name + " has " + std::to_string(count) +
                      " floats, its layout " + std::to_string(layout.shard_count()));
      std::vector<float>& values = full[name];
      values.resize(layout.full_count());
      insert_shard(layout, shard.data(), values.data());
    }
  }
  std::vector<FullParameter> parameters;
  for (auto& entry : full)
    parameters.push_back(FullParameter{entry.first, std::move(entry.second)});
  return parameters;
}

}  // namespace whale::exec

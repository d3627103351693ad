// File: executor_update.cpp
// Executor: gradient reduction and optimizer instructions, checkpoint state, and the full
// parameters gathered to rank 0.
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "runtime/executor_impl.h"
#include "runtime/executor_optimizer.h"
#include "whale/exec/model/tensor_shard.h"
#include "whale/plan/check.h"

namespace whale::exec {

void Executor::Impl::reduce_gradients(int s) {
  const auto start = std::chrono::steady_clock::now();
  stage(s).optimizer->reduce_gradients();
  record("dp", "allreduce s" + std::to_string(s), s, -1, start);
}

void Executor::Impl::optimizer_step(int s) {
  const auto start = std::chrono::steady_clock::now();
  stage(s).optimizer->step();
  record("optimizer", "optimizer s" + std::to_string(s), s, -1, start);
}

std::vector<float> Executor::save_state() const {
  std::vector<float> state;
  for (const auto& entry : impl_->stages) {
    const std::vector<float> part = entry.second.optimizer->save_state();
    state.insert(state.end(), part.begin(), part.end());
  }
  return state;
}

void Executor::load_state(const std::vector<float>& state) {
  std::size_t offset = 0;
  for (auto& entry : impl_->stages) offset += entry.second.optimizer->load_state(state, offset);
  if (offset != state.size())
    throw std::invalid_argument("executor state: " + std::to_string(state.size() - offset) +
                                " floats left over");
}

std::vector<FullParameter> Executor::gather_parameters() {
  // Each rank of replica 0 writes its shards as text, "name tp_rank tp_size count" then the
  // values (%.9g: floats round-trip exactly); rank 0 puts each shard into its full tensor.
  std::string text;
  char number[32];
  for (auto& entry : impl_->stages) {
    const StageState& st = entry.second;
    if (st.role.replica != 0) continue;
    const int tp_size = impl_->plan.stages.at(entry.first).tp;
    for (const ParameterView& p : st.module->parameters()) {
      if (p.tp_replicated && st.role.tp_rank != 0) continue;
      text += p.name + ' ' + std::to_string(st.role.tp_rank) + ' ' + std::to_string(tp_size) +
              ' ' + std::to_string(p.count);
      for (std::size_t i = 0; i < p.count; ++i) {
        std::snprintf(number, sizeof(number), " %.9g", p.value[i]);
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
      const TensorShard layout = gpt_parameter_shard(impl_->plan.model, name, tp_rank, tp_size);
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

// File: executor_update.cpp
// Executor: gradient reduction and optimizer instructions, checkpoint state, and the
// plan-independent parameter summary.
#include <cmath>
#include <cstring>
#include <map>
#include <sstream>
#include <stdexcept>

#include "executor_impl.h"
#include "executor_optimizer.h"

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

std::vector<ParameterSummary> Executor::summarize_parameters() {
  // Each rank of replica 0 describes its shards as text lines; rank 0 adds them up by name.
  std::ostringstream lines;
  lines.precision(17);
  for (auto& entry : impl_->stages) {
    const StageState& st = entry.second;
    if (st.role.replica != 0) continue;
    for (const ParameterView& p : st.module->parameters()) {
      if (p.tp_replicated && st.role.tp_rank != 0) continue;
      double sum = 0, squares = 0, abs_sum = 0;
      for (std::size_t i = 0; i < p.count; ++i) {
        sum += p.value[i];
        squares += static_cast<double>(p.value[i]) * p.value[i];
        abs_sum += std::abs(static_cast<double>(p.value[i]));
      }
      lines << p.name << ' ' << p.count << ' ' << sum << ' ' << squares << ' ' << abs_sum << '\n';
    }
  }
  std::map<std::string, ParameterSummary> by_name;
  for (const std::string& part : impl_->transport.gather_to_root(lines.str())) {
    std::istringstream in(part);
    ParameterSummary row;
    while (in >> row.name >> row.count >> row.sum >> row.sum_of_squares >> row.sum_of_abs) {
      ParameterSummary& total = by_name[row.name];
      total.name = row.name;
      total.count += row.count;
      total.sum += row.sum;
      total.sum_of_squares += row.sum_of_squares;
      total.sum_of_abs += row.sum_of_abs;
    }
  }
  std::vector<ParameterSummary> summaries;
  for (auto& entry : by_name) summaries.push_back(entry.second);
  return summaries;
}

}  // namespace whale::exec

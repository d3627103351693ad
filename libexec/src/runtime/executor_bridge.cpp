// File: executor_bridge.cpp
// Activations and gradients between stages on different groups, along plan::bridge_transfers.
// Forward: tp rank t of a receiving replica reads the full activations of each transfer from
// bridge_source_device. Backward: every tp rank holds the full input gradient, so tp rank t of
// a sending replica takes each transfer's gradient from exactly one receiver, tp rank
// t % receiver tp: a replicated activation's gradient is counted once. Replicas of one stage
// may run at different tp degrees (replica_tp): each transfer reads its own replicas' degrees.
#include <string>

#include "runtime/executor_impl.h"
#include "whale/plan/bridge.h"

namespace whale::exec {
namespace {

enum Direction { kActivation = 0, kGradient = 1 };

/// The message tag of the boundary after stage `s` (between s and s+1) for micro-batch mb.
int tag_of(const plan::Plan& plan, int s, int mb, Direction direction) {
  return ((s * plan.micro_batches) + mb) * 2 + direction;
}

/// Offset (floats) of transfer `t`'s first sample inside the buffer of `replica` of `stage`.
std::size_t offset_in(const plan::Stage& stage, int replica, const plan::BridgeTransfer& t,
                      std::size_t floats_per_sample) {
  return static_cast<std::size_t>(t.first_sample - stage.first_sample(replica)) *
         floats_per_sample;
}

}  // namespace

void Executor::Impl::send_activation(int s, int mb) {
  const StageState& st = stage(s);
  const plan::Stage& from = plan.stages[s];
  const plan::Stage& to = plan.stages[s + 1];
  const std::vector<float>& output = outputs.at({s, mb});
  const auto start = std::chrono::steady_clock::now();
  for (const plan::BridgeTransfer& t : plan::bridge_transfers(from, to)) {
    if (t.from_replica != st.role.replica) continue;
    const std::vector<int> receivers = to.replica_devices(t.to_replica);
    for (int to_tp = 0; to_tp < to.replica_tp(t.to_replica); ++to_tp) {
      if (plan::bridge_source_device(from, t.from_replica, to_tp) != device) continue;
      transport.post_send(output.data() + offset_in(from, t.from_replica, t, st.output_floats),
                          static_cast<std::size_t>(t.samples) * st.output_floats,
                          layout.rank_of_device(receivers[to_tp]),
                          tag_of(plan, s, mb, kActivation));
    }
  }
  outputs.erase({s, mb});
  record("pp", "send act s" + std::to_string(s) + " mb" + std::to_string(mb), s, mb, start);
}

void Executor::Impl::recv_activation(int s, int mb) {
  const StageState& st = stage(s);
  const plan::Stage& from = plan.stages[s - 1];
  const plan::Stage& to = plan.stages[s];
  std::vector<float>& input = inputs[{s, mb}];
  input.assign(static_cast<std::size_t>(samples(s)) * st.input_floats, 0.0f);
  const auto start = std::chrono::steady_clock::now();
  for (const plan::BridgeTransfer& t : plan::bridge_transfers(from, to)) {
    if (t.to_replica != st.role.replica) continue;
    const int source = plan::bridge_source_device(from, t.from_replica, st.role.tp_rank);
    transport.recv(input.data() + offset_in(to, t.to_replica, t, st.input_floats),
                   static_cast<std::size_t>(t.samples) * st.input_floats,
                   layout.rank_of_device(source), tag_of(plan, s - 1, mb, kActivation));
  }
  record("pp", "recv act s" + std::to_string(s) + " mb" + std::to_string(mb), s, mb, start);
}

void Executor::Impl::send_gradient(int s, int mb) {
  const StageState& st = stage(s);
  const plan::Stage& from = plan.stages[s - 1];
  const plan::Stage& to = plan.stages[s];
  const std::vector<float>& grad = input_grads.at({s, mb});
  const auto start = std::chrono::steady_clock::now();
  for (const plan::BridgeTransfer& t : plan::bridge_transfers(from, to)) {
    if (t.to_replica != st.role.replica) continue;
    const std::vector<int> senders = from.replica_devices(t.from_replica);
    for (int from_tp = 0; from_tp < from.replica_tp(t.from_replica); ++from_tp) {
      if (from_tp % to.replica_tp(t.to_replica) != st.role.tp_rank) continue;
      transport.post_send(grad.data() + offset_in(to, t.to_replica, t, st.input_floats),
                          static_cast<std::size_t>(t.samples) * st.input_floats,
                          layout.rank_of_device(senders[from_tp]),
                          tag_of(plan, s - 1, mb, kGradient));
    }
  }
  input_grads.erase({s, mb});
  record("pp", "send grad s" + std::to_string(s) + " mb" + std::to_string(mb), s, mb, start);
}

void Executor::Impl::recv_gradient(int s, int mb) {
  const StageState& st = stage(s);
  const plan::Stage& from = plan.stages[s];
  const plan::Stage& to = plan.stages[s + 1];
  std::vector<float>& grad = output_grads[{s, mb}];
  grad.assign(static_cast<std::size_t>(samples(s)) * st.output_floats, 0.0f);
  const auto start = std::chrono::steady_clock::now();
  for (const plan::BridgeTransfer& t : plan::bridge_transfers(from, to)) {
    if (t.from_replica != st.role.replica) continue;
    const int source = to.replica_devices(t.to_replica)[st.role.tp_rank % to.replica_tp(t.to_replica)];
    transport.recv(grad.data() + offset_in(from, t.from_replica, t, st.output_floats),
                   static_cast<std::size_t>(t.samples) * st.output_floats,
                   layout.rank_of_device(source), tag_of(plan, s, mb, kGradient));
  }
  record("pp", "recv grad s" + std::to_string(s) + " mb" + std::to_string(mb), s, mb, start);
}

}  // namespace whale::exec

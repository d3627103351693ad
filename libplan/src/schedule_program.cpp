// File: schedule_program.cpp
// generate_schedule: checks the shape, takes each group's compute order from its generator and
// emits the instructions, with sends and receives only where adjacent stages change group;
// every dp stage's gradient buckets follow the backward (or backward_weight) that completes
// them: placed as the plan's program is emitted, or added to a program by add_gradient_reductions.
#include <algorithm>
#include <string>
#include <utility>

#include "schedule_order.h"
#include "whale/plan/error.h"
#include "whale/plan/gradient_buckets.h"
#include "whale/plan/schedule_program.h"

namespace whale::plan {

const char* to_string(InstructionKind k) {
  switch (k) {
    case InstructionKind::recv_activation: return "recv_activation";
    case InstructionKind::forward: return "forward";
    case InstructionKind::send_activation: return "send_activation";
    case InstructionKind::recv_gradient: return "recv_gradient";
    case InstructionKind::backward: return "backward";
    case InstructionKind::backward_input: return "backward_input";
    case InstructionKind::backward_weight: return "backward_weight";
    case InstructionKind::send_gradient: return "send_gradient";
    case InstructionKind::reduce_bucket: return "reduce_bucket";
    case InstructionKind::wait_reductions: return "wait_reductions";
    case InstructionKind::optimizer_step: return "optimizer_step";
  }
  return "unknown";
}

bool completes_gradients(InstructionKind k) {
  return k == InstructionKind::backward || k == InstructionKind::backward_weight;
}

bool produces_input_gradient(InstructionKind k) {
  return k == InstructionKind::backward || k == InstructionKind::backward_input;
}

namespace {

void require(bool ok, const std::string& expected, const std::string& hint = "") {
  if (!ok) throw Error("", "schedule", expected, hint);
}

void check_shape(const detail::ScheduleShape& shape) {
  const std::string kind = to_string(shape.kind);
  require(shape.groups >= 1,
          "at least 1 pipeline group (got " + std::to_string(shape.groups) + ")");
  require(shape.chunks >= 1, "chunks >= 1 (got " + std::to_string(shape.chunks) + ")");
  require(shape.micro_batches >= 1,
          "micro_batches >= 1 (got " + std::to_string(shape.micro_batches) + ")");
  const bool single_chunk = shape.kind == ScheduleKind::gpipe ||
                            shape.kind == ScheduleKind::one_f_one_b ||
                            shape.kind == ScheduleKind::zb_h1;
  require(!single_chunk || shape.chunks == 1,
          kind + " runs one chunk per group (got chunks " + std::to_string(shape.chunks) + ")",
          "use interleaved-1f1b or wave for several chunks per group");
  require(shape.kind != ScheduleKind::interleaved_1f1b ||
              shape.micro_batches % shape.groups == 0,
          "interleaved-1f1b needs micro_batches divisible by the pipeline groups (got " +
              std::to_string(shape.micro_batches) + " micro-batches over " +
              std::to_string(shape.groups) + " groups)",
          "use a multiple of " + std::to_string(shape.groups) + " micro-batches, or 1f1b/wave");
}

InstructionKind backward_kind(detail::BackwardPart part) {
  switch (part) {
    case detail::BackwardPart::whole: return InstructionKind::backward;
    case detail::BackwardPart::input: return InstructionKind::backward_input;
    case detail::BackwardPart::weight: return InstructionKind::backward_weight;
  }
  return InstructionKind::backward;
}

/// Appends one compute op with its receive before and its send after, when the neighbouring
/// stage (the input's for forwards, the output gradient's for backwards) is on another group,
/// and `buckets` reduce_bucket instructions of its stage directly after the compute (the op
/// completes the stage's gradients: add_gradient_reductions). A backward's weight part neither
/// receives nor sends: its input part did.
void emit_compute(const detail::ComputeOp& op, const std::vector<int>& group_of, int group, int buckets,
                  std::vector<Instruction>* out) {
  using K = InstructionKind;
  const auto reductions = [&] {
    for (int b = 0; b < buckets; ++b) out->push_back({K::reduce_bucket, op.stage, -1, b});
  };
  if (!op.forward && op.part == detail::BackwardPart::weight) {
    out->push_back({K::backward_weight, op.stage, op.micro_batch});
    reductions();
    return;
  }
  const int last = static_cast<int>(group_of.size()) - 1;
  const bool remote_before = op.stage > 0 && group_of[op.stage - 1] != group;
  const bool remote_after = op.stage < last && group_of[op.stage + 1] != group;
  const bool recv = op.forward ? remote_before : remote_after;
  const bool send = op.forward ? remote_after : remote_before;
  if (recv) out->push_back({op.forward ? K::recv_activation : K::recv_gradient, op.stage,
                            op.micro_batch});
  out->push_back({op.forward ? K::forward : backward_kind(op.part), op.stage, op.micro_batch});
  reductions();
  if (send) out->push_back({op.forward ? K::send_activation : K::send_gradient, op.stage,
                            op.micro_batch});
}

/// generate_schedule of the shape, with add_gradient_reductions(buckets_per_stage) done as the
/// instructions are emitted (no stage has buckets when `buckets_per_stage` is empty).
ScheduleProgram generate_with_reductions(ScheduleKind kind, int groups, int chunks, int micro_batches,
                                         const std::vector<int>& buckets_per_stage) {
  const detail::ScheduleShape shape{kind, groups, chunks, micro_batches};
  check_shape(shape);
  // Wave orders are played once per shape and shared (shared_wave_orders); the others here.
  std::shared_ptr<const detail::ComputeOrders> wave;
  detail::ComputeOrders played;
  if (kind == ScheduleKind::wave) {
    wave = detail::shared_wave_orders(shape);
  } else {
    played = kind == ScheduleKind::zb_h1 ? detail::zb_h1_orders(shape) : detail::one_f_one_b_orders(shape);
  }
  const detail::ComputeOrders& orders = wave ? *wave : played;
  std::vector<int> group_of(shape.stages());
  for (int s = 0; s < shape.stages(); ++s) group_of[s] = group_of_stage(kind, groups, chunks, s);

  const auto buckets_of = [&](int s) { return buckets_per_stage.empty() ? 0 : buckets_per_stage.at(s); };
  ScheduleProgram program;
  program.groups.resize(groups);
  for (int s = 0; s < shape.stages(); ++s) program.groups[group_of[s]].stages.push_back(s);
  // Every (stage, micro-batch) completes its gradients once: the m-th such op of a stage is its last.
  std::vector<int> completed(shape.stages(), 0);
  for (int g = 0; g < groups; ++g) {
    GroupProgram& gp = program.groups[g];
    gp.group = g;
    std::size_t reductions = 0;
    for (int s : gp.stages) reductions += 1 + static_cast<std::size_t>(buckets_of(s));
    gp.instructions.reserve(3 * orders[g].size() + gp.stages.size() + reductions);  // receive, compute, send
    for (const detail::ComputeOp& op : orders[g]) {
      const bool completes = !op.forward && op.part != detail::BackwardPart::input;
      const bool last = completes && ++completed[op.stage] == micro_batches;
      emit_compute(op, group_of, g, last ? buckets_of(op.stage) : 0, &gp.instructions);
    }
    for (auto s = gp.stages.rbegin(); s != gp.stages.rend(); ++s) {
      if (buckets_of(*s) > 0) gp.instructions.push_back({InstructionKind::wait_reductions, *s, -1});
      gp.instructions.push_back({InstructionKind::optimizer_step, *s, -1});
    }
  }
  return program;
}

}  // namespace

ScheduleProgram generate_schedule(ScheduleKind kind, int groups, int chunks, int micro_batches) {
  return generate_with_reductions(kind, groups, chunks, micro_batches, {});
}

void add_gradient_reductions(const std::vector<int>& buckets_per_stage,
                             ScheduleProgram* program) {
  using K = InstructionKind;
  for (GroupProgram& gp : program->groups) {
    std::vector<Instruction> out;
    size_t added = 0;
    for (int s : gp.stages) added += 1 + static_cast<size_t>(buckets_per_stage.at(s));
    out.reserve(gp.instructions.size() + added);
    std::vector<int> backwards_left(buckets_per_stage.size(), 0);
    for (const Instruction& in : gp.instructions)
      if (completes_gradients(in.kind)) ++backwards_left.at(in.stage);
    for (const Instruction& in : gp.instructions) {
      const int buckets = buckets_per_stage.at(in.stage);
      if (in.kind == K::optimizer_step && buckets > 0)
        out.push_back({K::wait_reductions, in.stage, -1});
      out.push_back(in);
      if (completes_gradients(in.kind) && --backwards_left[in.stage] == 0)
        for (int b = 0; b < buckets; ++b) out.push_back({K::reduce_bucket, in.stage, -1, b});
    }
    gp.instructions = std::move(out);
  }
}

/// Runs f, naming the plan's file in the errors it throws (a plan built in code names none).
template <class F>
auto naming_plan_file(const Plan& plan, F f) {
  try {
    return f();
  } catch (const Error& e) {
    if (plan.source_file.empty()) throw;
    throw Error(plan.source_file, e.yaml_path(), e.expected(), e.hint());
  }
}

void check_schedule_shape(const Plan& plan) {
  naming_plan_file(plan, [&] {
    const int chunks = plan.schedule.chunks;
    const int stages = static_cast<int>(plan.stages.size());
    require(chunks >= 1, "chunks >= 1 (got " + std::to_string(chunks) + ")");
    require(stages >= 1 && stages % chunks == 0,
            "a stage count divisible by chunks (got " + std::to_string(stages) +
                " stages, chunks " + std::to_string(chunks) + ")");
    check_shape({plan.schedule.kind, plan.pipeline_groups(), chunks, plan.micro_batches});
  });
}

namespace {

Instruction compute_instruction(const detail::ComputeOp& op) {
  return {op.forward ? InstructionKind::forward : backward_kind(op.part), op.stage, op.micro_batch};
}

}  // namespace

ComputeSequences::ComputeSequences(const Plan& plan)
    : kind_(plan.schedule.kind), groups_(plan.pipeline_groups()), chunks_(plan.schedule.chunks),
      micro_batches_(plan.micro_batches) {
  if (kind_ == ScheduleKind::wave) played_ = detail::shared_wave_orders({kind_, groups_, chunks_, micro_batches_});
}

void ComputeSequences::for_each(int group, const std::function<void(const Instruction&)>& visit) const {
  const detail::ScheduleShape shape{kind_, groups_, chunks_, micro_batches_};
  const auto emit = [&](const detail::ComputeOp& op) { visit(compute_instruction(op)); };
  switch (kind_) {
    case ScheduleKind::wave:
      for (const detail::ComputeOp& op : played_->at(group)) emit(op);
      return;
    case ScheduleKind::zb_h1: detail::visit_zb_h1(shape, group, emit, true); return;
    default: detail::visit_one_f_one_b(shape, group, emit, true); return;
  }
}

ScheduleProgram generate_schedule(const Plan& plan) {
  check_schedule_shape(plan);
  return naming_plan_file(plan, [&] {
    const int stages = static_cast<int>(plan.stages.size());
    std::vector<int> buckets(stages, 0);
    for (int s = 0; s < stages; ++s) {
      if (plan.reduces_gradients(s)) buckets[s] = static_cast<int>(gradient_buckets(plan, s).size());
    }
    return generate_with_reductions(plan.schedule.kind, plan.pipeline_groups(), plan.schedule.chunks,
                                    plan.micro_batches, buckets);
  });
}

}  // namespace whale::plan

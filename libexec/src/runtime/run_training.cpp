// File: run_training.cpp
// whale-run's job: checks every input first (plan vs world, data, checkpoint), then trains,
// logging each step, writing metrics, checkpoints, the trace and the full parameters.
#include "whale/exec/runtime/run_training.h"

#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <memory>
#include <iostream>
#include <optional>

#include "backend/gpu_host/arena_size.h"
#include "runtime/expert_groups.h"
#include "whale/plan/host_heap.h"
#include "runtime/kernel_times.h"
#include "runtime/run_learning_rate.h"
#include "runtime/run_outputs.h"
#include "whale/exec/backend/backend_factory.h"
#include "whale/exec/runtime/checkpoint.h"
#include "whale/exec/runtime/checkpoint_resume.h"
#include "whale/exec/runtime/data_loader.h"
#include "whale/exec/runtime/executor.h"
#include "whale/exec/comm/mpi_communicator.h"
#include "whale/exec/runtime/rank_communicators.h"
#include "whale/exec/runtime/rank_devices.h"
#include "whale/exec/runtime/rank_layout.h"
#include "whale/exec/runtime/rank_placement.h"
#include "whale/exec/runtime/rank_threads.h"
#include "whale/exec/runtime/run_signals.h"
#include "whale/exec/comm/run_transport.h"
#include "whale/plan/atomic_file.h"
#include "whale/plan/error.h"
#include "whale/plan/plan_runtime.h"
#include "whale/plan/tool_boundary.h"

namespace whale::exec {
namespace {

/// Writes every rank's checkpoint for `step`, then (after all have) marks it latest.
void save_checkpoint(const RunOptions& options, const plan::Plan& plan, Executor& executor,
                     PeerTransport& transport, int64_t step, uint64_t seed) {
  if (transport.rank() == 0 && ::mkdir(options.checkpoint_dir.c_str(), 0755) != 0 &&
      errno != EEXIST)
    throw Error(options.checkpoint_dir, "", "a checkpoint folder that can be created");
  transport.barrier();
  Checkpoint checkpoint;
  checkpoint.header = CheckpointHeader{transport.rank(), transport.size(),
                                       plan_fingerprint(plan), step, seed,
                                       checkpoint_precision_code(plan.precision)};
  checkpoint.state = executor.save_state();
  write_checkpoint(checkpoint_path(options.checkpoint_dir, step, transport.rank()), checkpoint);
  transport.barrier();
  if (transport.rank() == 0) mark_latest(options.checkpoint_dir, step);
}

/// The GPU models among the plan's devices, e.g. "A100, V100"; "" when all are CPUs.
std::string gpu_models(const plan::Plan& plan) {
  std::string models;
  for (const auto& [name, profile] : plan.cluster.profiles)
    if (profile.kind == "gpu") models += (models.empty() ? "" : ", ") + name;
  return models;
}

/// A GPU rank's CUDA ordinal (assign_local_gpus over the ranks' hosts, `host_of_rank`; it refuses
/// two ranks on one GPU) and arena (the plan's predicted peak for its device plus the margin of
/// arena_size.h).
void place_gpu_rank(const plan::Plan& plan, const RankLayout& layout, int rank,
                    const std::vector<int>& host_of_rank, const RunOptions& options,
                    ExecutorOptions& executor_options) {
  const std::vector<DeviceKind> kinds =
      rank_device_kinds(plan, layout, executor_options.cpu_device);
  bool any_gpu = false;
  for (DeviceKind kind : kinds) any_gpu = any_gpu || kind == DeviceKind::gpu;
  if (!any_gpu) return;
  const int gpus_per_host = local_gpu_count();  // none found: make_backend says so, with a hint
  const std::vector<int> gpus =
      assign_local_gpus(plan, layout, host_of_rank, gpus_per_host > 0 ? gpus_per_host : -1);
  if (kinds[rank] != DeviceKind::gpu) return;
  executor_options.local_gpu = gpus[rank];
  if (options.predicted_tensor_bytes)
    executor_options.arena_bytes = gpu::arena_bytes_for_peak(
        options.predicted_tensor_bytes(plan).at(layout.device_of_rank(rank)));
}

/// How far the placement check compares device models: --device cpu runs every rank on its CPU,
/// --device gpu on whatever GPUs the hosts have.
DeviceCheck device_check(const std::string& device) {
  if (device == "cpu") return DeviceCheck::none;
  return device == "gpu" ? DeviceCheck::any_gpu : DeviceCheck::model;
}

/// True on every rank once any rank got SIGINT/SIGTERM.
bool stop_agreed(PeerTransport& transport) {
  std::vector<double> flag = {stop_requested() ? 1.0 : 0.0};
  transport.sum(flag);
  return flag[0] > 0;
}

}  // namespace

void run_training(const RunOptions& options, std::ostream& log) {
  using Clock = std::chrono::steady_clock;
  plan::keep_freed_host_memory();
  auto transport = make_mpi_transport();
  auto world = world_communicator();
  const bool root = transport->rank() == 0;

  // 1. Inputs, all checked before anything is written.
  const plan::Plan plan = plan::load_plan(options.plan_file);
  plan::check_runnable(plan);
  validate_expert_layout(plan);  // the plan's own faults before how it is launched
  const RankLayout layout(plan);
  layout.check_world_size(transport->size());
  const std::vector<int> host_of_rank = host_ids(
      check_placement_on_all_ranks(plan, layout, transport->rank(), device_check(options.device)));
  const std::string gpus = gpu_models(plan);
  if (root && !gpus.empty() && options.device != "cpu")  // one note per run, not per rank
    log << "whale-run: note: the plan's devices include GPUs (" << gpus
        << "): their ranks run the CUDA backend, NCCL among GPUs, the host bridge to CPUs"
        << std::endl;
  if (options.resume && options.checkpoint_dir.empty())
    throw Error("", "--resume", "a --checkpoint-dir to resume from");
  if (options.checkpoint_every > 0 && options.checkpoint_dir.empty())
    throw Error("", "--checkpoint-every", "a --checkpoint-dir to write checkpoints into");
  std::optional<Checkpoint> resumed;
  if (options.resume) {
    const std::string who = transport->size() > 1
                                ? "rank " + std::to_string(transport->rank()) + ": " : "";
    const AllRanksOk all_ok = [&](bool ok) {
      std::vector<double> failed = {ok ? 0.0 : 1.0};
      transport->sum(failed);
      return failed[0] == 0;
    };
    resumed = resume_checkpoint(options.checkpoint_dir, plan_fingerprint(plan), transport->rank(),
                                all_ok, "whale-run: warning: " + who, std::cerr);
    const int64_t latest = latest_step(options.checkpoint_dir);
    if (root && resumed->header.step != latest)
      std::cerr << "whale-run: warning: the checkpoint of step " << latest
                << " is damaged or incomplete; resuming from step " << resumed->header.step
                << std::endl;
  }
  if (resumed && resumed->header.precision != 0 &&
      resumed->header.precision != checkpoint_precision_code(plan.precision)) {
    const std::string saved = checkpoint_precision_name(resumed->header.precision);
    throw Error(checkpoint_path(options.checkpoint_dir, resumed->header.step, transport->rank()),
                "header.precision",
                std::string("a checkpoint of ") + plan::to_string(plan.precision) +
                    " training (the plan's precision), got one of " + saved + " training",
                "resume with the plan at precision " + saved + ", or start a new run in another --checkpoint-dir");
  }
  if (resumed && options.seed_given && options.seed != resumed->header.seed) {
    throw Error(options.checkpoint_dir, "--seed",
                "the seed of the run being resumed (" + std::to_string(resumed->header.seed) +
                    "), got " + std::to_string(options.seed),
                "leave out --seed when resuming, or start a new run in another --checkpoint-dir");
  }
  const uint64_t seed = resumed ? resumed->header.seed : options.seed;
  const DataLoader loader(load_tokens(options.data_file), plan, seed);
  ExecutorOptions executor_options;
  executor_options.seed = seed;
  executor_options.learning_rate = learning_rate_schedule(options);
  executor_options.weight_decay = options.weight_decay;
  executor_options.momentum = options.momentum;
  executor_options.clip_grad = options.clip_grad;
  executor_options.record_timeline = !options.trace_file.empty();
  executor_options.record_layer_times = !options.layer_times_file.empty();
  if (executor_options.record_layer_times && plan.schedule.kind == plan::ScheduleKind::zb_h1)
    throw Error(options.plan_file, "schedule",
                "a schedule whose backward passes are whole for --layer-times, got zb-h1",
                "zb-h1 splits each backward into an input and a weight pass, which are not timed per "
                "layer; measure the layer times with the same stages under schedule 1f1b");
  if (!options.device.empty() && options.device != "cpu" && options.device != "gpu")
    throw Error("", "--device", "\"cpu\" or \"gpu\", got \"" + options.device + "\"",
                "leave --device out to run on the plan's devices");
  executor_options.cpu_device = options.device == "cpu";
  if (options.threads < 0)
    throw Error("", "--threads", "a thread count >= 1, got " + std::to_string(options.threads),
                "leave it out for the node's cores divided among its ranks");
  executor_options.threads = options.threads > 0 ? options.threads : default_rank_threads();
  place_gpu_rank(plan, layout, transport->rank(), host_of_rank, options, executor_options);
  Executor executor(plan, layout, *world, *transport, executor_options);
  int64_t first_step = 0;
  if (resumed) {
    try {
      executor.load_state(resumed->state);
    } catch (const std::invalid_argument& e) {
      throw Error(checkpoint_path(options.checkpoint_dir, resumed->header.step, transport->rank()),
                  "state", std::string("state of this plan's stages: ") + e.what());
    }
    first_step = resumed->header.step;
  }

  // 2. Outputs, then training.
  KernelTimesRecorder kernel_times(options.kernel_times_file, root, executor.device_name());
  std::unique_ptr<AtomicFile> metrics;
  if (root && !options.metrics_file.empty())
    metrics = std::make_unique<AtomicFile>(options.metrics_file, "--metrics");
  install_stop_signals();
  const double tokens_per_step = static_cast<double>(plan.global_batch()) * plan.model.sequence;
  if (root)
    log << "whale-run: " << plan.source_file << " on " << transport->size() << " rank(s), "
        << plan.global_batch() << " samples x " << plan.model.sequence << " tokens per step, "
        << "steps " << first_step + 1 << ".." << options.steps << ", "
        << plan::to_string(plan.precision) << ", " << executor_options.threads
        << " thread(s) per rank\n";
  if (root && executor_options.cpu_device)
    log << "whale-run: note: --device cpu: every rank runs on a CPU backend, whatever device "
           "the plan gives it\n";
  int64_t step = first_step;
  int64_t saved_step = resumed ? first_step : -1;
  while (step < options.steps) {
    const auto start = Clock::now();
    kernel_times.before_step(step, first_step, options.steps);
    StepRecord record;
    record.loss = executor.train_step(loader, step);
    if (!std::isfinite(record.loss)) {
      throw Error(options.plan_file, "step " + std::to_string(step + 1),
                  "a finite training loss, got " + std::to_string(record.loss),
                  "the run diverged; lower --lr (now " + std::to_string(options.learning_rate) +
                      ") or resume from an earlier checkpoint");
    }
    record.step_time_s = std::chrono::duration<double>(Clock::now() - start).count();
    record.tokens_per_s = tokens_per_step / record.step_time_s;
    record.step = ++step;
    record.device = executor.device_name();
    record.peak_memory_bytes = static_cast<int64_t>(executor.peak_memory_bytes());
    if (plan.precision == plan::Precision::fp16) {
      record.skipped_steps = executor.skipped_steps();
      record.loss_scale = executor.loss_scale();
    }
    record.grad_norm = executor.grad_norm();
    if (root && options.log_every > 0 && (step % options.log_every == 0 || step == options.steps))
      log << format_log_line(record, options.steps) << std::endl;
    if (metrics) {
      metrics->write(format_metrics_line(record) + "\n");
      metrics->flush();
    }
    const bool stop = stop_agreed(*transport);
    const bool due = options.checkpoint_every > 0 && step % options.checkpoint_every == 0;
    if (!options.checkpoint_dir.empty() && (due || stop || step == options.steps)) {
      save_checkpoint(options, plan, executor, *transport, step, seed);
      saved_step = step;
    }
    if (stop) {
      if (root)
        log << "whale-run: stopped by signal after step " << step
            << (saved_step == step ? ", checkpoint written" : "") << std::endl;
      break;
    }
  }
  if (metrics) metrics->commit();
  kernel_times.finish();
  const std::string peaks = gather_peak_memory_line(executor.peak_memory_bytes(), *transport);
  if (root) log << peaks << std::endl;
  if (!options.trace_file.empty())
    write_measured_trace(options.trace_file, plan, executor.last_timeline(), *transport);
  if (!options.layer_times_file.empty())
    write_layer_times(options.layer_times_file, executor.layer_time_samples(), *transport);
  if (!options.dump_params_file.empty()) {
    const std::vector<FullParameter> parameters = executor.gather_parameters();
    if (root) write_parameters(options.dump_params_file, parameters);
  }
}

int run_training_main(const RunOptions& options) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const std::string who = size > 1 ? "rank " + std::to_string(rank) : "";
  const int code = run_guarded("whale-run", [&] {
    run_training(options, std::cout);
    return 0;
  }, who);
  if (code != 0 && size > 1) abort_world_after_report(code);
  return code;
}

}  // namespace whale::exec

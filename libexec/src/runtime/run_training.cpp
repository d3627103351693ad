// File: run_training.cpp
// whale-run's job: checks every input first (plan vs world, data, checkpoint), then trains,
// logging each step, writing metrics, checkpoints, the trace and the full parameters.
#include "whale/exec/runtime/run_training.h"

#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <iostream>
#include <optional>

#include "runtime/run_outputs.h"
#include "whale/exec/runtime/checkpoint.h"
#include "whale/exec/runtime/checkpoint_resume.h"
#include "whale/exec/runtime/data_loader.h"
#include "whale/exec/runtime/executor.h"
#include "whale/exec/comm/mpi_communicator.h"
#include "whale/exec/runtime/rank_layout.h"
#include "whale/exec/runtime/run_signals.h"
#include "whale/exec/comm/run_transport.h"
#include "whale/plan/error.h"

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
                                       plan_fingerprint(plan), step, seed};
  checkpoint.state = executor.save_state();
  write_checkpoint(checkpoint_path(options.checkpoint_dir, step, transport.rank()), checkpoint);
  transport.barrier();
  if (transport.rank() == 0) mark_latest(options.checkpoint_dir, step);
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
  auto transport = make_mpi_transport();
  auto world = world_communicator();
  const bool root = transport->rank() == 0;

  // 1. Inputs, all checked before anything is written.
  const plan::Plan plan = plan::load_plan(options.plan_file);
  const RankLayout layout(plan);
  layout.check_world_size(transport->size());
  if (options.resume && options.checkpoint_dir.empty())
    throw Error("", "--resume", "a --checkpoint-dir to resume from");
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
  const uint64_t seed = resumed ? resumed->header.seed : options.seed;
  const DataLoader loader(load_tokens(options.data_file), plan, seed);
  ExecutorOptions executor_options;
  executor_options.seed = seed;
  executor_options.learning_rate = options.learning_rate;
  executor_options.record_timeline = !options.trace_file.empty();
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
  std::ofstream metrics;
  if (root && !options.metrics_file.empty()) metrics = open_output(options.metrics_file);
  install_stop_signals();
  const double tokens_per_step = static_cast<double>(plan.global_batch()) * plan.model.sequence;
  if (root)
    log << "whale-run: " << plan.source_file << " on " << transport->size() << " rank(s), "
        << plan.global_batch() << " samples x " << plan.model.sequence << " tokens per step, "
        << "steps " << first_step + 1 << ".." << options.steps << "\n";
  int64_t step = first_step;
  int64_t saved_step = resumed ? first_step : -1;
  while (step < options.steps) {
    const auto start = Clock::now();
    StepRecord record;
    record.loss = executor.train_step(loader, step);
    record.step_time_s = std::chrono::duration<double>(Clock::now() - start).count();
    record.tokens_per_s = tokens_per_step / record.step_time_s;
    record.step = ++step;
    if (root && options.log_every > 0 && (step % options.log_every == 0 || step == options.steps))
      log << format_log_line(record, options.steps) << std::endl;
    if (root && metrics.is_open()) metrics << format_metrics_line(record) << std::endl;
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
  if (!options.trace_file.empty())
    write_measured_trace(options.trace_file, plan, executor.last_timeline(), *transport);
  if (!options.dump_params_file.empty()) {
    const std::vector<FullParameter> parameters = executor.gather_parameters();
    if (root) write_parameters(options.dump_params_file, parameters);
  }
}

int run_training_main(const RunOptions& options) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const std::string who = size > 1 ? "rank " + std::to_string(rank) + ": " : "";
  int code = 0;
  try {
    run_training(options, std::cout);
    return 0;
  } catch (const Error& e) {
    std::cerr << "whale-run: error: " << who << e.what() << std::endl;
    code = 2;
  } catch (const std::exception& e) {
    std::cerr << "whale-run: error: " << who << e.what() << std::endl;
    code = 1;
  }
  if (size > 1) abort_world(code);
  return code;
}

}  // namespace whale::exec

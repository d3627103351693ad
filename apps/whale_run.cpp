// File: whale_run.cpp
// whale-run: trains a GPT by a whale plan over MPI (or alone, without mpirun, for one rank).
// Parses the command line; run_training_main does the work and maps errors to exit codes.
#include <CLI/CLI.hpp>

#include "whale/exec/comm/mpi_communicator.h"
#include "whale/exec/runtime/run_training.h"
#include "whale/plan/version.h"

int main(int argc, char** argv) {
  whale::exec::RunOptions o;
  CLI::App app{"whale-run: train a GPT by a whale plan; mpirun -np N whale-run PLAN.yaml --data FILE"};
  app.set_version_flag("--version", whale::plan::version_text("whale-run"));
  app.add_option("plan", o.plan_file, "plan YAML (its devices map to ranks in ascending id order)")
      ->required();
  app.add_option("--data", o.data_file, "training data: a text file or a whale token file")
      ->required();
  app.add_option("--steps", o.steps, "total training steps (a resumed run continues to it)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--lr", o.learning_rate, "AdamW learning rate")->check(CLI::PositiveNumber);
  app.add_option("--seed", o.seed, "seed of the initial parameters and the data order");
  app.add_option("--checkpoint-dir", o.checkpoint_dir, "folder for checkpoints");
  app.add_option("--checkpoint-every", o.checkpoint_every,
                 "write a checkpoint every K steps (always at the end)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--resume", o.resume, "continue from the latest checkpoint in --checkpoint-dir");
  app.add_option("--metrics", o.metrics_file, "JSON lines: step, loss, step_time_s, tokens_per_s");
  app.add_option("--trace", o.trace_file, "Chrome trace JSON of the last step's measured timeline");
  app.add_option("--dump-params", o.dump_params_file,
                 "every full parameter after training (\"name count\", then one value a line)");
  app.add_option("--log-every", o.log_every, "log every K steps (0: none)")
      ->check(CLI::NonNegativeNumber);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::cerr << "whale-run: error: " << e.what() << std::endl;
    return 2;
  }
  whale::exec::MpiSession session(&argc, &argv);
  return whale::exec::run_training_main(o);
}

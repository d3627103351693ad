// File: whale_run.cpp
// whale-run: trains a GPT or Llama by a whale plan over MPI (or alone, without mpirun, for one rank).
// Parses the command line; run_training_main does the work and maps errors to exit codes.
#include <vector>

#include "tool_main.h"
#include "whale/exec/comm/mpi_communicator.h"
#include "whale/exec/runtime/run_training.h"
#include "whale/plan/limits.h"
#include "whale/plan/version.h"
#include "whale/sim/simulator.h"

int main(int argc, char** argv) {
  whale::exec::RunOptions o;
  CLI::App app{"whale-run: train a GPT or Llama by a whale plan; mpirun -np N whale-run PLAN.yaml --data FILE"};
  app.set_version_flag("--version", whale::plan::version_text("whale-run"));
  app.add_option("plan", o.plan_file, "plan YAML (its devices map to ranks in ascending id order)")
      ->required();
  app.add_option("--data", o.data_file, "training data: a text file or a whale token file")
      ->required();
  app.add_option("--steps", o.steps, "total training steps (a resumed run continues to it)")
      ->check(whale::app::number_in(0, static_cast<double>(whale::plan::kMaxSteps)));
  // Above 10 AdamW and SGD diverge on any model; such a value is a typo (1e30) or a unit mix-up.
  app.add_option("--lr", o.learning_rate, "learning rate of the model's optimizer (training.optimizer: AdamW or SGD)")
      ->check(whale::app::number_above(0, 10));
  app.add_option("--min-lr", o.min_learning_rate, "the rate a linear or cosine decay ends at (default 0)")
      ->check(whale::app::number_in(0, 10));
  app.add_option("--lr-warmup-steps", o.warmup_steps, "updates of a linear warm-up from 0 to --lr (default 0)")
      ->check(whale::app::number_in(0, static_cast<double>(whale::plan::kMaxSteps)));
  app.add_option("--lr-decay-style", o.lr_decay_style,
                 "constant (default), linear or cosine from --lr to --min-lr after the warm-up")
      ->check(CLI::IsMember({"constant", "linear", "cosine"}));
  app.add_option("--lr-decay-steps", o.lr_decay_steps, "the update the decay ends at (default: --steps)")
      ->check(whale::app::number_in(1, static_cast<double>(whale::plan::kMaxSteps)));
  app.add_option("--weight-decay", o.weight_decay,
                 "AdamW's decoupled or SGD's L2 weight decay on the weight matrices, not biases or norms "
                 "(default 0; Megatron-LM's is 0.01)")
      ->check(whale::app::number_in(0, 10));
  app.add_option("--clip-grad", o.clip_grad,
                 "clip the gradients to this global L2 norm, as Megatron-LM's --clip-grad (default 0: no "
                 "clipping; Megatron-LM's is 1.0); the norm goes to --metrics as grad_norm")
      ->check(whale::app::number_in(0, 1e9));
  app.add_option("--momentum", o.momentum, "SGD's momentum (training.optimizer: sgd; default 0.9)")
      ->check(whale::app::number_in(0, 1));
  CLI::Option* seed = app.add_option("--seed", o.seed, "seed of the initial parameters and the data order");
  CLI::Option* dir = app.add_option("--checkpoint-dir", o.checkpoint_dir, "folder for checkpoints");
  app.add_option("--checkpoint-every", o.checkpoint_every,
                 "write a checkpoint every K steps (always at the end)")
      ->check(whale::app::number_in(0, static_cast<double>(whale::plan::kMaxSteps)))
      ->needs(dir);
  app.add_flag("--resume", o.resume, "continue from the latest checkpoint in --checkpoint-dir")
      ->needs(dir);
  app.add_option("--metrics", o.metrics_file, "JSON lines: step, loss, step_time_s, tokens_per_s")
      ->check(whale::app::output_file());
  app.add_option("--trace", o.trace_file, "Chrome trace JSON of the last step's measured timeline")
      ->check(whale::app::output_file());
  app.add_option("--layer-times", o.layer_times_file,
                 "CSV of median per-layer times (whale-calibrate --layer-times)")
      ->check(whale::app::output_file());
  app.add_option("--kernel-times", o.kernel_times_file,
                 "CSV of rank 0's GPU kernels per timed step, through CUPTI (rank 0 on a GPU)")
      ->check(whale::app::output_file());
  app.add_option("--dump-params", o.dump_params_file,
                 "every full parameter after training (\"name count\", then one value a line)")
      ->check(whale::app::output_file());
  app.add_option("--log-every", o.log_every, "log every K steps (0: none)")
      ->check(whale::app::number_in(0, static_cast<double>(whale::plan::kMaxSteps)));
  app.add_option("--threads", o.threads,
                 "CPU threads per rank (default: the node's cores divided among its ranks)")
      ->check(whale::app::number_in(1, 4096));
  app.add_option("--device", o.device,
                 "cpu: run every rank on a CPU backend, even where the plan gives it a GPU; "
                 "gpu: run the plan's GPU ranks on the hosts' GPUs whatever their model")
      ->check(CLI::IsMember({"cpu", "gpu"}));
  return whale::app::run_tool("whale-run", app, argc, argv, [&] {
    o.seed_given = seed->count() > 0;
    whale::app::check_distinct_outputs({{"--metrics", o.metrics_file}, {"--trace", o.trace_file},
                                        {"--layer-times", o.layer_times_file},
                                        {"--kernel-times", o.kernel_times_file},
                                        {"--dump-params", o.dump_params_file}});
    // GPU ranks size their device arenas from whale-sim's memory model of the same plan.
    o.predicted_tensor_bytes = [](const whale::plan::Plan& plan) {
      const whale::plan::Estimate estimate = whale::sim::Simulator().evaluate(plan, {});
      std::vector<double> bytes(plan.cluster.devices.size(), 0.0);
      for (const whale::plan::DeviceEstimate& d : estimate.devices)
        bytes.at(d.id) = static_cast<double>(d.tensor_memory_bytes);
      return bytes;
    };
    whale::exec::MpiSession session(&argc, &argv);
    return whale::exec::run_training_main(o);
  });
}

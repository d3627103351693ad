// File: checkpoint.h
// Checkpoints: one file per rank per step, written atomically, with a header that ties it to
// its plan and a checksum; a `latest` file names the newest complete step.
//
// Layout of a checkpoint folder D:
//   D/step-00000010/rank-00003.ckpt   rank 3's state after 10 steps
//   D/latest                          "step-00000010\n", replaced atomically once every rank
//                                     has written its file
// Rank file, little-endian: char[8] "WHALECKP", uint32 version (1), uint32 rank, uint32 world
// size, uint32 precision (checkpoint_precision_code; 0 in files written before it was kept),
// uint64 plan fingerprint, int64 step, uint64 data seed (the loader's whole
// RNG state: samples are a pure function of seed and step), uint64 float count N, float[N]
// state, then uint64 FNV-1a checksum of all bytes before it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "whale/plan/plan.h"

namespace whale::exec {

struct CheckpointHeader {
  int rank = 0;
  int world_size = 1;
  uint64_t fingerprint = 0;
  int64_t step = 0;         // steps completed
  uint64_t seed = 0;        // data loader seed
  uint32_t precision = 0;   // checkpoint_precision_code of the run that wrote it; 0: not recorded
};

/// The code of a training precision in a checkpoint header: 1 + its enumerator (0 is "not
/// recorded"). The saved state depends on it: fp16 keeps a loss scaler's state, and the
/// precisions round the weights differently.
uint32_t checkpoint_precision_code(plan::Precision precision);
/// The precision of a code, "unknown" for 0 or a code no precision has.
std::string checkpoint_precision_name(uint32_t code);

struct Checkpoint {
  CheckpointHeader header;
  std::vector<float> state;
};

/// FNV-1a 64 of the model's hyperparameters, the batch shape and every stage's layout (layers,
/// devices, tp, shares, optimizer sharding): what the saved state's shape depends on.
uint64_t plan_fingerprint(const plan::Plan& plan);

/// "<dir>/step-%08d/rank-%05d.ckpt".
std::string checkpoint_path(const std::string& dir, int64_t step, int rank);
/// Creates the step folder if needed and writes the file atomically. Throws whale::Error if
/// it cannot be written.
void write_checkpoint(const std::string& path, const Checkpoint& checkpoint);
/// Reads and checks a rank file: magic, version, length, checksum, and that it belongs to
/// `fingerprint` and `rank`. Throws whale::Error naming the file and the field that is wrong.
Checkpoint read_checkpoint(const std::string& path, uint64_t fingerprint, int rank);

/// Atomically points <dir>/latest at `step`.
void mark_latest(const std::string& dir, int64_t step);
/// The step <dir>/latest names. Throws whale::Error when there is none or it is malformed.
int64_t latest_step(const std::string& dir);

}  // namespace whale::exec

// File: checkpoint_resume.h
// Which checkpoint --resume continues from: the step <dir>/latest names when every rank reads
// its file intact, otherwise the newest older step where every rank does (with a warning).
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "whale/exec/runtime/checkpoint.h"

namespace whale::exec {

/// `newest` followed by every older step that has a folder "step-NNNNNNNN" in `dir`, newest
/// first. Steps above `newest` are ignored: they may be half written. Every rank that lists
/// the same folder gets the same list.
std::vector<int64_t> checkpoint_steps(const std::string& dir, int64_t newest);

/// Agreement of all ranks: returns true on every rank exactly when `ok` is true on every rank
/// (one collective call per invocation). A single process passes [](bool ok) { return ok; }.
using AllRanksOk = std::function<bool(bool ok)>;

/// The checkpoint of `rank` that --resume continues from. Tries the steps of
/// checkpoint_steps(dir, latest_step(dir)) in order; a step is taken when every rank reads its
/// file without error (magic, length, checksum, plan fingerprint, rank). Each file of this
/// rank that fails is named on `warn` as `prefix` + its error + the step tried next. The
/// oldest step is read without agreement: a rank whose file there is bad throws its whale::Error
/// (the others then wait in their first collective until the job is aborted). Throws
/// whale::Error as latest_step() does when <dir>/latest is missing or malformed.
Checkpoint resume_checkpoint(const std::string& dir, uint64_t fingerprint, int rank,
                             const AllRanksOk& all_ok, const std::string& prefix,
                             std::ostream& warn);

}  // namespace whale::exec

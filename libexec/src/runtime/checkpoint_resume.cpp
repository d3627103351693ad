// File: checkpoint_resume.cpp
// Falling back from a damaged or incomplete latest checkpoint to the newest intact one.
#include "whale/exec/runtime/checkpoint_resume.h"

#include <dirent.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <ostream>

#include "whale/plan/error.h"

namespace whale::exec {

std::vector<int64_t> checkpoint_steps(const std::string& dir, int64_t newest) {
  std::vector<int64_t> older;
  if (DIR* folder = ::opendir(dir.c_str())) {
    while (const dirent* entry = ::readdir(folder)) {
      long long step = -1;
      int length = 0;
      // Exactly "step-" and eight or more digits, as checkpoint_path() writes them.
      if (std::sscanf(entry->d_name, "step-%lld%n", &step, &length) == 1 &&
          std::strlen(entry->d_name) == static_cast<std::size_t>(length) && length >= 13 &&
          entry->d_name[5] >= '0' && entry->d_name[5] <= '9' && step >= 0 && step < newest)
        older.push_back(step);
    }
    ::closedir(folder);
  }
  std::sort(older.begin(), older.end(), std::greater<int64_t>());
  older.insert(older.begin(), newest);
  return older;
}

Checkpoint resume_checkpoint(const std::string& dir, uint64_t fingerprint, int rank,
                             const AllRanksOk& all_ok, const std::string& prefix,
                             std::ostream& warn) {
  const std::vector<int64_t> steps = checkpoint_steps(dir, latest_step(dir));
  for (std::size_t i = 0; i + 1 < steps.size(); ++i) {
    Checkpoint checkpoint;
    bool ok = true;
    try {
      checkpoint = read_checkpoint(checkpoint_path(dir, steps[i], rank), fingerprint, rank);
    } catch (const Error& e) {
      ok = false;
      // One write per line, so that the lines of several ranks do not interleave.
      const std::string line = prefix + e.what() + "; falling back to the checkpoint of step " +
                               std::to_string(steps[i + 1]) + "\n";
      warn << line << std::flush;
    }
    if (all_ok(ok)) return checkpoint;
  }
  return read_checkpoint(checkpoint_path(dir, steps.back(), rank), fingerprint, rank);
}

}  // namespace whale::exec

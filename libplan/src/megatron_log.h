// File: megatron_log.h
// The parts of a Megatron-LM training log that time a run: the printed arguments and the timer
// blocks of each logging interval (megatron/core/timers.py's three log options). Private to
// libplan; megatron_log_layer_times.cpp turns them into layer times.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace whale::plan {

/// One timer of one logging interval, in milliseconds per iteration (Megatron divides by the
/// log interval). Per rank under --timing-log-option all; else the min and max across ranks
/// ("max" gives only the max: min_ms = max_ms).
struct MegatronTimer {
  std::map<int, double> ms_by_rank;  // `all` only
  double min_ms = 0;
  double max_ms = 0;
};

/// One printed timer block: the timers by name.
using MegatronTimerBlock = std::map<std::string, MegatronTimer>;

struct MegatronLog {
  std::string path;
  /// The "arguments" block: name -> printed value ("None", "True", "4").
  std::map<std::string, std::string> arguments;
  /// " > padded vocab (size: V) with D dummy tokens (new size: N)": N, or 0.
  int padded_vocab_size = 0;
  /// Whether the blocks are per rank (`all`) rather than min/max across ranks.
  bool per_rank = false;
  std::vector<MegatronTimerBlock> blocks;

  /// The argument `name` as an integer >= `minimum`; throws whale::Error naming the file and
  /// the argument when it is missing or not one.
  int integer(const std::string& name, int minimum = 1) const;
  /// The argument as printed, or "" when the log does not print it.
  std::string text(const std::string& name) const;
};

/// Reads the log at `path`: lines may carry a logger's prefix (a timestamp, "[rank0]:"). Throws
/// whale::Error naming the file when it is unreadable, has no arguments block or no timer
/// block.
MegatronLog load_megatron_log(const std::string& path);

}  // namespace whale::plan

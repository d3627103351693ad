// File: megatron_log.cpp
// Reads the arguments and timer blocks of a Megatron-LM training log (megatron_log.h), in the
// formats of megatron/training/arguments.py (_print_args) and megatron/core/timers.py.
#include "megatron_log.h"

#include <algorithm>
#include <cstdlib>
#include <regex>
#include <sstream>

#include "whale/plan/error.h"
#include "whale/plan/text_file.h"

namespace whale::plan {
namespace {

const std::string kArgumentsStart = "------------------------ arguments ------------------------";
const std::string kArgumentsEnd = "end of arguments";
const std::string kMinMaxHeader = "(min, max) time across ranks (ms):";
const std::string kMaxHeader = "max time across ranks (ms):";
const std::string kAllHeader = "times across ranks (ms):";

// '  {arg} {dots} {value}': the dots pad the name to 48 characters.
const std::regex kArgumentLine(R"(([A-Za-z_][A-Za-z0-9_]*) \.+ (.*?)\s*$)");
// '    {name padded with dots to 48}: ({min:.2f}, {max:.2f})' and '...: {max:.2f}'.
const std::regex kMinMaxLine(R"(^\s+([A-Za-z0-9_-]+) \.*: \(([0-9.eE+-]+), ([0-9.eE+-]+)\)\s*$)");
const std::regex kMaxLine(R"(^\s+([A-Za-z0-9_-]+) \.*: ([0-9.eE+-]+)\s*$)");
// '  {name}:' then '     rank {rank:2d}: {ms:.2f}' per rank.
const std::regex kAllNameLine(R"(^\s+([A-Za-z0-9_-]+):\s*$)");
const std::regex kAllRankLine(R"(^\s+rank\s+([0-9]+): ([0-9.eE+-]+)\s*$)");
const std::regex kPaddedVocab(R"(new size: ([0-9]+)\))");

double to_ms(const std::string& text) { return std::strtod(text.c_str(), nullptr); }

enum class BlockKind { none, min_max, max, all };

BlockKind header_kind(const std::string& line) {
  if (line.find(kMinMaxHeader) != std::string::npos) return BlockKind::min_max;
  if (line.find(kMaxHeader) != std::string::npos) return BlockKind::max;
  if (line.find(kAllHeader) != std::string::npos) return BlockKind::all;
  return BlockKind::none;
}

/// Adds `line` to `block` when it belongs to a block of `kind`; false when it ends the block.
bool read_timer_line(BlockKind kind, const std::string& line, std::string* current, MegatronTimerBlock* block) {
  std::smatch m;
  if (kind == BlockKind::min_max && std::regex_match(line, m, kMinMaxLine)) {
    (*block)[m[1]] = {{}, to_ms(m[2]), to_ms(m[3])};
    return true;
  }
  if (kind == BlockKind::max && std::regex_match(line, m, kMaxLine)) {
    (*block)[m[1]] = {{}, to_ms(m[2]), to_ms(m[2])};
    return true;
  }
  if (kind != BlockKind::all) return false;
  if (std::regex_match(line, m, kAllRankLine) && !current->empty()) {
    MegatronTimer& t = (*block)[*current];
    const double ms = to_ms(m[2]);
    t.min_ms = t.ms_by_rank.empty() ? ms : std::min(t.min_ms, ms);
    t.max_ms = t.ms_by_rank.empty() ? ms : std::max(t.max_ms, ms);
    t.ms_by_rank[std::atoi(m[1].str().c_str())] = ms;
    return true;
  }
  if (std::regex_match(line, m, kAllNameLine)) {
    *current = m[1];
    return true;
  }
  return false;
}

}  // namespace

int MegatronLog::integer(const std::string& name, int minimum) const {
  const std::string value = text(name);
  char* end = nullptr;
  const long n = std::strtol(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || n < minimum || n > 1L << 30) {
    throw Error(path, "arguments." + name, "an integer >= " + std::to_string(minimum) + ", got '" + value + "'",
                value.empty() ? "the log's arguments block must print it (Megatron prints every argument at start)"
                              : "a Megatron-LM log of a run that trained");
  }
  return static_cast<int>(n);
}

std::string MegatronLog::text(const std::string& name) const {
  const auto it = arguments.find(name);
  return it == arguments.end() ? "" : it->second;
}

MegatronLog load_megatron_log(const std::string& path) {
  MegatronLog log;
  log.path = path;
  std::istringstream in(read_text_file(path, "Megatron-LM log"));
  std::string line, current;
  bool in_arguments = false, seen_arguments = false;
  BlockKind kind = BlockKind::none;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::smatch m;
    if (kind != BlockKind::none) {
      if (read_timer_line(kind, line, &current, &log.blocks.back())) continue;
      kind = BlockKind::none;
    }
    if (line.find(kArgumentsStart) != std::string::npos) {
      in_arguments = seen_arguments = true;
    } else if (in_arguments && line.find(kArgumentsEnd) != std::string::npos) {
      in_arguments = false;
    } else if (in_arguments && std::regex_search(line, m, kArgumentLine)) {
      log.arguments[m[1]] = m[2];
    } else if (std::regex_search(line, m, kPaddedVocab)) {
      log.padded_vocab_size = std::atoi(m[1].str().c_str());
    } else if ((kind = header_kind(line)) != BlockKind::none) {
      log.per_rank = kind == BlockKind::all;
      log.blocks.emplace_back();
      current.clear();
    }
  }
  if (!seen_arguments) {
    throw Error(path, "", "a Megatron-LM log with its arguments block ('" + kArgumentsStart + "')",
                "keep the whole stdout of the run, from its start");
  }
  if (log.blocks.empty()) {
    throw Error(path, "", "a Megatron-LM log with timer blocks ('" + kMinMaxHeader + "' or '" + kAllHeader + "')",
                "run with --timing-log-level 2 (or 1) and at least --log-interval iterations");
  }
  return log;
}

}  // namespace whale::plan

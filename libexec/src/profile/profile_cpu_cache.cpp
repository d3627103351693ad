// File: profile_cpu_cache.cpp
// The last-level cache from sysfs.
#include "whale/exec/profile/profile_cpu_cache.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace whale::exec {
namespace {

/// The first line of `path`, trimmed; empty when it cannot be read.
std::string first_line(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ' || line.back() == '\r')) line.pop_back();
  return line;
}

/// "32768K", "1M", "512" (bytes) in bytes; 0 when malformed.
Bytes size_field_bytes(const std::string& text) {
  std::size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0) return 0;
  const double value = std::stod(text.substr(0, digits));
  const std::string unit = text.substr(digits);
  if (unit.empty()) return value;
  if (unit == "K") return value * 1024.0;
  if (unit == "M") return value * 1024.0 * 1024.0;
  if (unit == "G") return value * 1024.0 * 1024.0 * 1024.0;
  return 0;
}

}  // namespace

int cpu_list_count(const std::string& list) {
  int count = 0;
  std::stringstream ranges(list);
  std::string range;
  while (std::getline(ranges, range, ',')) {
    int first = 0, last = 0;
    char dash = 0;
    std::stringstream parse(range);
    if (!(parse >> first)) return 0;
    last = first;
    if (parse >> dash) {
      if (dash != '-' || !(parse >> last) || last < first) return 0;
    }
    std::string rest;
    if (parse >> rest) return 0;
    count += last - first + 1;
  }
  return count;
}

LastLevelCache read_last_level_cache(const std::string& cache_dir) {
  LastLevelCache best;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(cache_dir, ec)) {
    if (entry.path().filename().string().rfind("index", 0) != 0) continue;
    const std::string type = first_line(entry.path() / "type");
    if (type != "Data" && type != "Unified") continue;
    const std::string level_text = first_line(entry.path() / "level");
    const int level = level_text.empty() ? 0 : std::atoi(level_text.c_str());
    const Bytes size = size_field_bytes(first_line(entry.path() / "size"));
    const int shared = cpu_list_count(first_line(entry.path() / "shared_cpu_list"));
    if (level > best.level && size > 0 && shared > 0) best = {size, shared, level};
  }
  return best;
}

Bytes cache_bytes_per_device(const LastLevelCache& cache, int threads) {
  const int used = std::clamp(threads, 1, std::max(cache.shared_cpus, 1));
  return cache.size_bytes * used / std::max(cache.shared_cpus, 1);
}

}  // namespace whale::exec

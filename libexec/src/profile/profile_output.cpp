// File: profile_output.cpp
// check_writable, the profile name of an output path, write-then-validate, and the summary.
#include "whale/exec/profile/profile_output.h"

#include <sys/stat.h>

#include <cctype>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "whale/plan/error.h"

namespace whale::exec {
namespace {

bool exists(const std::string& path, bool* is_dir) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0) return false;
  *is_dir = S_ISDIR(info.st_mode);
  return true;
}

std::string folder_of(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

void check_writable(const std::string& path) {
  const char* expected = "a writable output path";
  if (path.empty()) throw Error("", "--out", expected, "give a file name such as profiles/NAME.yaml");
  bool is_dir = false;
  const std::string folder = folder_of(path);
  if (!exists(folder, &is_dir) || !is_dir)
    throw Error(path, "", expected, "the folder " + folder + " does not exist");
  const bool existed = exists(path, &is_dir);
  if (existed && is_dir) throw Error(path, "", expected, "it is a folder; give a file name");
  {
    std::ofstream probe(path, std::ios::app);  // app: an existing file keeps its content
    if (!probe) throw Error(path, "", expected, "the file cannot be opened for writing");
  }
  if (!existed) std::remove(path.c_str());
}

std::string profile_name_for(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  std::string stem = slash == std::string::npos ? path : path.substr(slash + 1);
  const std::size_t dot = stem.find_last_of('.');
  if (dot != std::string::npos && dot > 0) stem.resize(dot);
  return stem;
}

std::string rank_output_path(const std::string& pattern, int rank) {
  const std::string key = "{rank}";
  if (pattern.find(key) == std::string::npos)
    throw Error("", "--out", "a path with {rank} (each rank writes its own profile), got \"" + pattern + "\"",
                "e.g. --out profiles/cpu-core{rank}.yaml");
  std::string out = pattern;
  for (std::size_t at = out.find(key); at != std::string::npos; at = out.find(key, at))
    out.replace(at, key.size(), std::to_string(rank));
  return out;
}

std::string profile_name_slug(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else if (!out.empty() && out.back() != '-')
      out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

plan::DeviceProfile write_validated_profile(const plan::DeviceProfile& profile,
                                            const std::string& path) {
  plan::save_device_profile(profile, path);
  return plan::load_device_profile(path);
}

std::string summarize_profile(const plan::DeviceProfile& profile) {
  std::ostringstream out;
  char line[256];
  std::snprintf(line, sizeof line, "profile %s (%s)\n", profile.name.c_str(),
                profile.kind.c_str());
  out << line;
  for (const auto& [precision, peak] : profile.peak_flops_per_s) {
    const plan::EfficiencyCurve& curve = profile.gemm_curve(precision);
    const double best = curve.empty() ? 0.0 : curve.points().back().efficiency * peak;
    std::snprintf(line, sizeof line,
                  "  gemm %-4s peak %.2f GFLOP/s, at the largest size %.2f GFLOP/s\n",
                  plan::to_string(precision), peak / 1e9, best / 1e9);
    out << line;
  }
  std::snprintf(line, sizeof line, "  memory %.2f GiB usable, bandwidth %.2f GB/s\n",
                profile.memory_bytes / kBytesPerGiB, profile.memory_bandwidth_bytes_per_s / 1e9);
  out << line;
  std::snprintf(line, sizeof line, "  kernel launch %.3f us\n", profile.kernel_launch_s * 1e6);
  out << line;
  if (!profile.cache.empty()) {
    std::snprintf(line, sizeof line, "  cache %.1f MiB per device; warm figures for %zu GEMM curve(s), %zu op class(es)\n",
                  profile.cache.cache_bytes_per_device / kBytesPerMiB,
                  profile.cache.warm_gemm_efficiency.size(), profile.cache.warm_op_bandwidth_bytes_per_s.size());
    out << line;
    // The walked warm fraction at its smallest and largest working set.
    const std::vector<plan::EfficiencyPoint>& walked = profile.cache.warm_fraction_by_working_set.points();
    if (!walked.empty()) {
      std::snprintf(line, sizeof line, "  cache walk: warm fraction %.2f at %.1f MiB to %.2f at %.1f MiB\n",
                    walked.front().efficiency, walked.front().size / kBytesPerMiB, walked.back().efficiency,
                    walked.back().size / kBytesPerMiB);
      out << line;
    }
  }
  return out.str();
}

}  // namespace whale::exec

// File: rank_placement_probe.cpp
// What a rank reports for the placement check (host name or its override, GPUs, CPU model),
// the reports gathered over MPI, and whale-run's check on all ranks.
#include <mpi.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "runtime/visible_gpus.h"
#include "whale/exec/comm/mpi_communicator.h"
#include "whale/exec/runtime/rank_devices.h"
#include "whale/exec/runtime/rank_placement.h"
#include "whale/plan/error.h"

namespace whale::exec {
namespace {

std::string host_name() {
  const char* fake = std::getenv(kHostNameVariable);
  if (fake != nullptr && *fake != '\0') return fake;
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown-host";
  return name;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon != std::string::npos && colon + 2 <= line.size()) return line.substr(colon + 2);
  }
  return "";
}

// A report as text: the host, the CPU, then one GPU name per line (names hold no newline).
std::string encode(const RankReport& r) {
  std::string text = r.host + "\n" + r.cpu + "\n";
  for (const std::string& gpu : r.gpus) text += gpu + "\n";
  return text;
}

RankReport decode(const std::string& text) {
  std::istringstream in(text);
  RankReport r;
  std::getline(in, r.host);
  std::getline(in, r.cpu);
  for (std::string gpu; std::getline(in, gpu);) r.gpus.push_back(gpu);
  return r;
}

}  // namespace

std::vector<std::string> select_visible_gpus(const std::string& smi_output, const char* visible) {
  std::vector<std::string> all;
  std::istringstream in(smi_output);
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    if (!line.empty()) all.push_back(line);
  }
  if (visible == nullptr) return all;
  std::vector<std::string> shown;
  std::istringstream list(visible);
  for (std::string entry; std::getline(list, entry, ',');) {
    char* end = nullptr;
    const long index = std::strtol(entry.c_str(), &end, 10);
    if (entry.empty() || *end != '\0' || index < 0 || index >= static_cast<long>(all.size())) break;
    shown.push_back(all[index]);
  }
  return shown;
}

std::vector<std::string> nvidia_smi_gpu_names() {
  std::FILE* pipe = popen("nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null", "r");
  if (pipe == nullptr) return {};
  std::string output;
  char buffer[256];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
  if (pclose(pipe) != 0) return {};
  return select_visible_gpus(output, std::getenv("CUDA_VISIBLE_DEVICES"));
}

RankReport this_rank_report(bool list_gpus) {
  RankReport report;
  report.host = host_name();
  report.cpu = cpu_model();
  if (list_gpus) {
#if defined(WHALE_HAVE_CUDA)
    report.gpus = cuda_visible_gpu_names();
#else
    report.gpus = nvidia_smi_gpu_names();
#endif
  }
  return report;
}

std::vector<RankReport> gather_rank_reports(const RankReport& mine) {
  int size = 0;
  WHALE_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  const std::string text = encode(mine);
  int length = static_cast<int>(text.size());
  std::vector<int> lengths(size), offsets(size);
  WHALE_MPI_CHECK(MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD));
  int total = 0;
  for (int r = 0; r < size; ++r) {
    offsets[r] = total;
    total += lengths[r];
  }
  std::string all(static_cast<size_t>(total), '\0');
  WHALE_MPI_CHECK(MPI_Allgatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(),
                                 offsets.data(), MPI_CHAR, MPI_COMM_WORLD));
  std::vector<RankReport> reports;
  for (int r = 0; r < size; ++r) reports.push_back(decode(all.substr(offsets[r], lengths[r])));
  return reports;
}

std::vector<int> host_ids(const std::vector<RankReport>& reports) {
  std::vector<int> ids(reports.size());
  for (std::size_t r = 0; r < reports.size(); ++r) {
    std::size_t first = 0;
    while (reports[first].host != reports[r].host) ++first;
    ids[r] = static_cast<int>(first);
  }
  return ids;
}

std::vector<RankReport> check_placement_on_all_ranks(const plan::Plan& plan,
                                                     const RankLayout& layout, int rank,
                                                     DeviceCheck check) {
  const bool gpu_rank = device_kind_of_rank(plan, layout, rank) == DeviceKind::gpu;
  const std::vector<RankReport> reports =
      gather_rank_reports(this_rank_report(gpu_rank && check != DeviceCheck::none));
  try {
    check_rank_placement(plan, layout, reports, check);
    return reports;
  } catch (const Error&) {
    if (rank == 0) throw;
    // Rank 0 found the same error from the same reports and reports it for all; its handler
    // ends every rank (MPI_Abort) while this one waits here.
    MPI_Barrier(MPI_COMM_WORLD);
    throw;
  }
}

}  // namespace whale::exec

// File: export_launch.cpp
// A launch as files: a Slurm batch script (a heterogeneous job where node types differ) or an
// OpenMPI hostfile with its mpirun line. Layout: docs/run.md, "Running across machines".
#include <algorithm>
#include <sstream>

#include "whale/plan/atomic_file.h"
#include "whale/plan/launch.h"

namespace whale::plan {
namespace {

std::string ranks_text(int first, int count) {
  return count == 1 ? "rank " + std::to_string(first)
                    : "ranks " + std::to_string(first) + "-" + std::to_string(first + count - 1);
}

std::string join(const std::vector<std::string>& words, const std::string& separator) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) out += (i ? separator : "") + words[i];
  return out;
}

int total_ranks(const LaunchSpec& spec) {
  return spec.hosts.empty() ? 0 : spec.hosts.back().first_rank + spec.hosts.back().tasks;
}

// What one host runs, for a comment: "8 x a100-sxm4-40gb" or "2 x cpu".
std::string host_devices(const LaunchHost& host) {
  return std::to_string(host.tasks) + " x " + join(host.models, "/");
}

// Runs of consecutive hosts alike in tasks, GPUs and device models: a Slurm job component each.
std::vector<std::vector<LaunchHost>> components(const std::vector<LaunchHost>& hosts) {
  std::vector<std::vector<LaunchHost>> out;
  for (const LaunchHost& h : hosts) {
    const bool alike = !out.empty() && out.back().front().tasks == h.tasks &&
                       out.back().front().gpus == h.gpus && out.back().front().models == h.models;
    if (!alike) out.emplace_back();
    out.back().push_back(h);
  }
  return out;
}

void header(std::ostringstream& out, const LaunchSpec& spec, const std::string& kind,
            const std::string& launcher) {
  out << "# " << kind << " of " << spec.title << ": " << total_ranks(spec)
      << " ranks, one per device, on " << spec.hosts.size() << " host(s) in rank order.\n"
      << "# Written by " << spec.written_by << " " << launcher
      << " (docs/run.md, \"Running across machines\").\n";
  if (!std::all_of(spec.hosts.begin(), spec.hosts.end(), [](const LaunchHost& h) { return h.mapped; }))
    out << "# Host names are the cluster file's node names where --hosts gave none: replace them\n"
        << "# with your machines' names, or export again with --hosts NODE=HOST,...\n";
}

}  // namespace

std::string slurm_script(const LaunchSpec& spec) {
  std::ostringstream out;
  out << "#!/bin/bash\n";
  header(out, spec, "Slurm batch script", "slurm");
  const std::vector<std::vector<LaunchHost>> parts = components(spec.hosts);
  if (parts.size() > 1)
    out << "# Node types differ: one component of a heterogeneous job per run of alike nodes, in\n"
        << "# rank order (srun numbers the ranks of component 0 first).\n";
  out << "#SBATCH --job-name=whale\n";
  for (size_t c = 0; c < parts.size(); ++c) {
    const std::vector<LaunchHost>& part = parts[c];
    if (c > 0) out << "#SBATCH hetjob\n";
    std::vector<std::string> names;
    for (const LaunchHost& h : part) names.push_back(h.host == h.node ? h.node : h.host + " (" + h.node + ")");
    out << "# " << ranks_text(part.front().first_rank, static_cast<int>(part.size()) * part.front().tasks)
        << ", " << host_devices(part.front()) << " per node: " << join(names, ", ") << "\n";
    names.clear();
    for (const LaunchHost& h : part) names.push_back(h.host);
    out << "#SBATCH --nodes=" << part.size() << "\n"
        << "#SBATCH --nodelist=" << join(names, ",") << "\n"
        << "#SBATCH --ntasks-per-node=" << part.front().tasks << "\n";
    if (part.front().gpus > 0) out << "#SBATCH --gpus-per-node=" << part.front().gpus << "\n";
  }
  out << "set -euo pipefail\n";
  for (const LaunchVariable& v : spec.variables) {
    out << v.name << "=\"${" << v.name
        << (v.fallback.empty() ? ":?set " + v.name + " to " + v.meaning : ":-" + v.fallback) << "}\"  # "
        << v.meaning << "\n";
  }
  const bool gpus = std::any_of(spec.hosts.begin(), spec.hosts.end(), [](const LaunchHost& h) { return h.gpus > 0; });
  if (gpus)
    out << "# Block distribution keeps each node's ranks consecutive; every rank sees all GPUs of its\n"
        << "# node (--gpu-bind=none) and drives the one of its device's index on the node.\n";
  else
    out << "# Block distribution keeps each node's ranks consecutive.\n";
  out << "srun";
  if (parts.size() > 1) out << " --het-group=0-" << parts.size() - 1;
  out << " --distribution=block" << (gpus ? " --gpu-bind=none" : "");
  for (const std::string& word : spec.command) out << " " << (word[0] == '$' ? "\"" + word + "\"" : word);
  out << "\n";
  return out.str();
}

std::string mpirun_command(const LaunchSpec& spec, const std::string& path) {
  std::string line = "mpirun -np " + std::to_string(total_ranks(spec)) + " --hostfile " + path +
                     " --map-by slot --bind-to none";
  for (const std::string& word : spec.command) {
    std::string shown = word;
    for (const LaunchVariable& v : spec.variables)
      if (word == "$" + v.name) shown = v.fallback.empty() ? v.name : v.fallback;
    line += " " + shown;
  }
  return line;
}

std::string mpirun_hostfile(const LaunchSpec& spec, const std::string& path) {
  std::ostringstream out;
  header(out, spec, "OpenMPI hostfile", "mpirun");
  out << "# Run: " << mpirun_command(spec, path) << "\n";
  for (const LaunchVariable& v : spec.variables)
    if (v.fallback.empty()) out << "# (" << v.name << ": " << v.meaning << ")\n";
  out << "# --map-by slot fills each host's slots before the next, so each node's ranks are\n"
      << "# consecutive; --bind-to none leaves a rank's threads free to use the node's cores.\n";
  for (const LaunchHost& h : spec.hosts) {
    out << "# " << ranks_text(h.first_rank, h.tasks) << ": " << h.node << ", "
        << host_devices(h) << "\n"
        << h.host << " slots=" << h.tasks << "\n";
  }
  return out.str();
}

std::string write_launch(Launcher launcher, const LaunchSpec& spec, const std::string& path,
                         const std::string& option) {
  if (launcher == Launcher::slurm) {
    write_file_atomically(path, slurm_script(spec), option);
    return "Slurm batch script of " + spec.title + ": " + path + " (run: sbatch " + path + ")\n";
  }
  write_file_atomically(path, mpirun_hostfile(spec, path), option);
  return "OpenMPI hostfile of " + spec.title + ": " + path + "\n  run: " + mpirun_command(spec, path) + "\n";
}

std::string write_launches(const LaunchRequests& requests, const LaunchSpec& spec, const std::string& option) {
  std::vector<Launcher> launchers;
  for (const auto& request : requests) launchers.push_back(parse_launcher(request.first, option));
  std::string printed;
  for (size_t i = 0; i < requests.size(); ++i) printed += write_launch(launchers[i], spec, requests[i].second, option);
  return printed;
}

}  // namespace whale::plan

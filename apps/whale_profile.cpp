// File: whale_profile.cpp
// whale-profile: measures a device (--device cpu|cuda:N) into a profile YAML; under mpirun,
// every rank's CPU core at once in step (--lockstep), or the links between ranks (--links) into
// the link section of a cluster YAML; --check validates a profile file. Errors in the input:
// one line on stderr, exit 2.
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>

#include "whale/exec/comm/mpi_communicator.h"
#include "whale/exec/profile/profile_cpu_cache.h"
#include "whale/exec/profile/profile_device_prober.h"
#include "whale/exec/profile/profile_links.h"
#include "whale/exec/profile/profile_lockstep.h"
#include "whale/plan/host_heap.h"
#include "whale/exec/profile/profile_output.h"
#include "tool_main.h"
#include "whale/plan/atomic_file.h"
#include "whale/plan/error.h"
#include "whale/plan/launch.h"
#include "whale/plan/tool_boundary.h"
#include "whale/plan/version.h"

namespace {

using namespace whale::exec;

struct Args {
  std::string device = "cpu";
  std::string out;
  std::string check;
  std::string link_kind;
  bool quick = false;
  bool links = false;
  bool lockstep = false;
  whale::plan::LaunchRequests launches;  // --export-launch slurm|mpirun FILE
  std::string cluster, nodes, hosts;
};

void progress_line(const std::string& line) { std::cerr << "whale-profile: " << line << "\n"; }

std::string op_table(const std::vector<OpTiming>& timings, const std::string& source) {
  std::string text = "op timings (" + source + "):\n";
  for (const OpTiming& t : timings) {
    char row[256];
    std::snprintf(row, sizeof row, "  %6d calls  median %10.3f us  total %10.3f us  %s\n",
                  t.calls, t.median_s * 1e6, t.total_s * 1e6, t.name.c_str());
    text += row;
  }
  return text;
}

/// Measures the device into `out` (default: NAME.yaml of the prober's default name), calling
/// `in_step` as ProbeOptions says; progress lines go through `progress`.
int profile_device(const Args& args, const std::string& out_path, const std::function<void()>& in_step,
                   const ProgressFn& progress) {
  const DeviceSpec spec = parse_device_spec(args.device);
  if (!out_path.empty()) check_writable(out_path);
  std::unique_ptr<DeviceProber> prober = make_device_prober(spec);
  ProbeOptions options;
  options.quick = args.quick;
  options.in_step = in_step;
  options.name = out_path.empty() ? prober->default_name() : profile_name_for(out_path);
  const std::string out = out_path.empty() ? options.name + ".yaml" : out_path;
  if (out_path.empty()) check_writable(out);  // a named path was checked before the prober started
  progress("measuring " + prober->description() + (args.quick ? " (quick)" : ""));
  const ProbeResult result = prober->measure(options, progress);
  const whale::plan::DeviceProfile loaded = write_validated_profile(result.profile, out);
  progress("wrote " + out + " (loaded back and validated)");
  std::cout << summarize_profile(loaded);
  if (!result.op_timings.empty()) std::cout << op_table(result.op_timings, result.op_timing_source);
  return 0;
}

int run_device(const Args& args) { return profile_device(args, args.out, {}, progress_line); }

/// Under mpirun: every rank profiles the CPU core it is bound to, all at once, a barrier before
/// each timed sample, into --out with {rank} replaced. A rank that fails ends the job (the
/// others would wait at the next barrier).
int run_device_lockstep(const Args& args) {
  MpiSession mpi;
  std::unique_ptr<Communicator> world = world_communicator();
  const int rank = world->rank();
  std::string out;
  try {  // the same verdicts on every rank
    if (parse_device_spec(args.device).kind != DeviceSpec::Kind::cpu)
      throw whale::Error("", "--lockstep", "--device cpu (the ranks profile their CPU cores at once), got \"" +
                             args.device + "\"", "profile each GPU with its own whale-profile --device cuda:N");
    out = rank_output_path(args.out, rank);
  } catch (const whale::Error&) {
    if (rank == 0) throw;
    return whale::kExitBadInput;  // rank 0 reports it
  }
  ProfileLockstep lockstep(*world);
  const std::string who = "rank " + std::to_string(rank);
  const ProgressFn progress = [&](const std::string& line) { progress_line(who + ": " + line); };
  const int code = whale::run_guarded("whale-profile", [&] {
    return profile_device(args, out, [&] { lockstep.step(); }, progress);
  }, who);
  if (code != 0 && world->size() > 1) abort_world_after_report(code);
  const int others = lockstep.finish();
  if (others > 0) progress("waited out " + std::to_string(others) + " measurement(s) that other ranks made alone");
  return code;
}

int run_links(const Args& args) {
  const DeviceSpec spec = parse_device_spec(args.device);
  MpiSession mpi;
  std::unique_ptr<LinkEndpoint> endpoint = make_link_endpoint(spec);
  Communicator& comm = endpoint->communicator();
  if (!args.out.empty()) {
    try {
      check_writable_on_rank0(args.out);
    } catch (const whale::Error&) {
      if (comm.rank() == 0) throw;
      return whale::kExitBadInput;  // rank 0 reports it
    }
  }
  LinkSweepOptions options;
  options.quick = args.quick;
  // Host-memory links are timed as training issues its transfers, after compute that has
  // filled the caches (LinkSweepOptions::flusher); the flush is sized as the CPU profile's.
  std::unique_ptr<CacheFlusher> flusher;
  if (spec.kind == DeviceSpec::Kind::cpu) {
    flusher = std::make_unique<CacheFlusher>(read_last_level_cache(kSysfsCacheDir).size_bytes);
    options.flusher = flusher.get();
  }
  LinkReport report = measure_links(*endpoint, options, progress_line);
  if (comm.rank() != 0) return 0;
  if (!args.link_kind.empty()) report.link_kind = args.link_kind;
  std::cout << link_table(report);
  const std::string yaml = link_section_yaml(report);
  if (args.out.empty()) {
    std::cout << yaml;
  } else {
    whale::write_file_atomically(args.out, yaml, "--out");
    progress_line("wrote " + args.out);
  }
  return 0;
}

// Writes the launch files of the links measurement across cluster nodes; measures nothing.
int export_links_launch(const Args& args) {
  if (args.cluster.empty())
    throw whale::Error("", "--export-launch", "a --cluster whose nodes to launch on",
                       "e.g. --cluster configs/clusters/a100-v100.yaml --nodes a100-0,v100-0");
  const whale::plan::Cluster cluster = whale::plan::load_cluster(args.cluster);
  const whale::plan::HostMap hosts =
      args.hosts.empty() ? whale::plan::HostMap{} : whale::plan::parse_host_map(args.hosts, cluster, "--hosts");
  const whale::plan::LaunchSpec spec = whale::plan::links_launch(cluster, args.nodes, hosts, args.out, "--nodes");
  std::cout << whale::plan::write_launches(args.launches, spec, "--export-launch");
  return 0;
}

int run_check(const Args& args) {
  std::cout << summarize_profile(whale::plan::load_device_profile(args.check));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  whale::plan::keep_freed_host_memory();
  CLI::App app{"whale-profile: measure a device or the links between ranks for whale-plan"};
  app.set_version_flag("--version", whale::plan::version_text("whale-profile"));
  Args args;
  CLI::Option* device = app.add_option("--device", args.device, "cpu or cuda:N (default cpu)");
  CLI::Option* out = app.add_option("--out", args.out,
                 "output YAML: a device profile (default NAME.yaml), or with --links the link "
                 "section of a cluster (default: stdout)");
  CLI::Option* quick = app.add_flag("--quick", args.quick, "a smaller sweep that runs in a few seconds");
  CLI::Option* links = app.add_flag("--links", args.links, "time ping-pong and all-reduce between MPI ranks");
  app.add_option("--link-kind", args.link_kind, "the link kind written with --links")->needs(links);
  CLI::Option* lockstep = app.add_flag("--lockstep", args.lockstep,
                 "under mpirun: every rank profiles its CPU core at once, a barrier before each timed "
                 "sample; --out must hold {rank} (docs/profile-tool.md)")
                 ->needs(out)->excludes(links);
  CLI::Option* launch = app.add_option("--export-launch", args.launches,
                 "slurm FILE or mpirun FILE: write the launch of --links across the --cluster's nodes "
                 "instead of measuring (docs/profile-tool.md)")->needs(links);
  app.add_option("--cluster", args.cluster, "cluster YAML of --export-launch")->needs(launch);
  app.add_option("--nodes", args.nodes, "NODE,NODE,...: the nodes of --export-launch (default: the first two)")
      ->needs(launch);
  app.add_option("--hosts", args.hosts, "NODE=HOST,...: real host names of the nodes in --export-launch")
      ->needs(launch);
  // --check only reads a file: options that measure would be silently ignored with it.
  app.add_option("--check", args.check, "load and validate a profile YAML, print its summary")
      ->excludes(device)
      ->excludes(quick)
      ->excludes(links)
      ->excludes(lockstep)
      ->excludes(out);
  return whale::app::run_tool("whale-profile", app, argc, argv, [&] {
    if (!args.check.empty()) return run_check(args);
    if (!args.launches.empty()) return export_links_launch(args);
    if (args.links) return run_links(args);
    return args.lockstep ? run_device_lockstep(args) : run_device(args);
  });
}

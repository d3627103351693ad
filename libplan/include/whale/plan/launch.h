// File: launch.h
// Launch files for running ranks across machines: which cluster node (host) runs which ranks,
// and that placement as a Slurm batch script or as an OpenMPI hostfile with its mpirun line.
// Layout, argument by argument: docs/run.md, "Running across machines".
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "whale/plan/cluster.h"
#include "whale/plan/plan.h"

namespace whale::plan {

enum class Launcher { slurm, mpirun };

/// "slurm" or "mpirun". Throws whale::Error naming `option` for any other word.
Launcher parse_launcher(const std::string& word, const std::string& option);

/// Cluster node name -> the real host name that runs it.
using HostMap = std::map<std::string, std::string>;

/// Parses "NODE=HOST,NODE=HOST" (`--hosts`). Throws whale::Error naming `option` for a pair
/// without '=', an empty or malformed host name, a node that `cluster` lacks, a node named twice
/// or one host given to two nodes.
HostMap parse_host_map(const std::string& text, const Cluster& cluster, const std::string& option);

/// The devices of whale-run's ranks for `plan`: rank r runs the r-th smallest device id its
/// stages use. Device ids follow the cluster file, node by node, so each node's ranks are
/// consecutive.
std::vector<int> plan_rank_devices(const Plan& plan);

/// One machine of a launch: a cluster node and the consecutive ranks it runs.
struct LaunchHost {
  std::string node;                 // cluster node name
  std::string host;                 // the host name written: mapped by a HostMap, else `node`
  bool mapped = false;              // `host` came from a HostMap
  int first_rank = 0;
  int tasks = 0;                    // ranks on it, one per device
  int gpus = 0;                     // GPUs it must show each rank: 1 + its largest GPU index; 0 on CPUs
  std::vector<std::string> models;  // its ranks' device models, distinct, in order
};

/// The hosts of ranks that run `rank_devices` (rank r runs rank_devices[r], ascending), in
/// rank order. A node's host is `hosts`' entry for it, or the node's name (a placeholder).
/// Throws std::invalid_argument when the devices are not ascending or not in `cluster`.
std::vector<LaunchHost> launch_hosts(const Cluster& cluster, const std::vector<int>& rank_devices,
                                     const HostMap& hosts);

/// A shell variable of the launched command, e.g. PLAN with the default "plan.yaml".
struct LaunchVariable {
  std::string name;
  std::string fallback;  // the default; "" = the user must set it
  std::string meaning;   // "the training data file"
};

/// What to launch: the program each rank runs, on the hosts.
struct LaunchSpec {
  std::string title;                    // "whale-run of plan.yaml", the files' first comment
  std::string written_by;               // "whale-plan --export-launch"
  std::vector<LaunchHost> hosts;
  std::vector<LaunchVariable> variables;
  std::vector<std::string> command;     // words; "$NAME" stands for a variable
};

/// An sbatch script: one task per device, nodes in rank order with --nodelist,
/// --ntasks-per-node and --gpus-per-node per run of alike hosts (same tasks, GPUs and models),
/// as the components of a heterogeneous job when there are several, and one srun over them
/// with block distribution and every GPU of a node visible to its ranks.
std::string slurm_script(const LaunchSpec& spec);

/// An OpenMPI hostfile: one "HOST slots=TASKS" line per host in rank order, headed by comments
/// that give the mpirun line (mpirun_command with `path`).
std::string mpirun_hostfile(const LaunchSpec& spec, const std::string& path);

/// "mpirun -np N --hostfile PATH --map-by slot --bind-to none COMMAND", each variable replaced
/// by its default or, without one, by its name.
std::string mpirun_command(const LaunchSpec& spec, const std::string& path);

/// Writes the launch file of `launcher` to `path` atomically (errors name `option`) and returns
/// what to print: one line naming the file, and for mpirun the line to run.
std::string write_launch(Launcher launcher, const LaunchSpec& spec, const std::string& path,
                         const std::string& option);

/// Launch files asked for on a command line: (launcher word, path), e.g. ("slurm", "job.sh").
using LaunchRequests = std::vector<std::pair<std::string, std::string>>;

/// Writes every requested file (write_launch) and returns what to print, all lines together.
/// Every launcher word is checked (parse_launcher) before the first file is written.
std::string write_launches(const LaunchRequests& requests, const LaunchSpec& spec, const std::string& option);

/// The launch of whale-run for `plan`: its ranks on their nodes' hosts, the command
/// `whale-run "$PLAN" --data "$DATA"` with PLAN defaulting to `plan_path` ("plan.yaml" when
/// empty) and DATA to be set.
LaunchSpec whale_run_launch(const Plan& plan, const std::string& plan_path, const HostMap& hosts);

/// The launch of `whale-profile --links` across cluster nodes: one rank on the first device of
/// each node named in `nodes` ("NODE,NODE,..."; "" = the cluster's first two nodes), in cluster
/// order, running `--device cuda:0` where those devices are GPUs and `--device cpu` where they
/// are CPUs, with `--out "$OUT"` (OUT defaults to `out_path`, "links.yaml" when empty).
/// Throws whale::Error naming `option` for an unknown or repeated node, fewer than two nodes,
/// or nodes whose first devices mix GPUs and CPUs.
LaunchSpec links_launch(const Cluster& cluster, const std::string& nodes, const HostMap& hosts,
                        const std::string& out_path, const std::string& option);

}  // namespace whale::plan

// File: rank_placement.h
// Where each rank runs, checked against the plan at start: every rank reports its host, the
// GPUs it sees and its CPU; ranks of one cluster node must share a host, and each GPU rank
// must see the GPU of its device's index with the plan's device model.
#pragma once

#include <string>
#include <vector>

#include "whale/exec/runtime/rank_layout.h"
#include "whale/plan/plan.h"

namespace whale::exec {

/// The environment variable that overrides the host name a rank reports (read by whale only):
/// tests start ranks on one machine that claim different hosts.
inline constexpr const char* kHostNameVariable = "WHALE_HOST_NAME";

/// What one rank reports about where it runs.
struct RankReport {
  std::string host;               // kHostNameVariable when set, else gethostname()
  std::vector<std::string> gpus;  // the names of the GPUs it sees, by CUDA ordinal
  std::string cpu;                // the CPU's model name ("" when unknown)
};

/// How far device models are checked (whale-run --device).
enum class DeviceCheck {
  model,    // the plan's GPUs must be there with the plan's model (no --device)
  any_gpu,  // the GPUs must be there, of any model (--device gpu)
  none,     // every rank runs on its CPU; only hosts are checked (--device cpu)
};

/// The local rank of each rank: how many lower ranks report the same host.
std::vector<int> local_ranks(const std::vector<RankReport>& reports);

/// Checks `reports` (indexed by rank) against the plan, rank by rank, and throws whale::Error
/// (the plan file, "rank R on host H") for the first rank that is misplaced:
/// - its host differs from that of the first rank of its cluster node;
/// - it runs a GPU and shares a host with a GPU rank of another cluster node (their GPU
///   indices would collide), unless `check` is none; CPU ranks of several nodes may share one;
/// - it runs a GPU device (unless `check` is none) and sees no GPU of its device's index on its
///   node, or (with `check` model) that GPU's name does not match the device's profile
///   (plan::device_name_matches).
/// `reports.size()` must equal layout.world_size() (std::invalid_argument otherwise).
void check_rank_placement(const plan::Plan& plan, const RankLayout& layout,
                          const std::vector<RankReport>& reports, DeviceCheck check);

/// This rank's report. GPUs are listed only when `list_gpus` (probing them costs a CUDA
/// runtime start): by the CUDA runtime in a CUDA build, else by `nvidia-smi --query-gpu=name`;
/// none where neither finds any.
RankReport this_rank_report(bool list_gpus);

/// Every rank's report, indexed by rank, on every rank of MPI_COMM_WORLD (collective).
std::vector<RankReport> gather_rank_reports(const RankReport& mine);

/// Which ranks share a machine, from their reports' host names: entry r is the lowest rank whose
/// host is rank r's. The one notion of a host that whale-run uses, for the placement check and
/// for the GPU each rank drives (assign_local_gpus), so that kHostNameVariable moves both.
std::vector<int> host_ids(const std::vector<RankReport>& reports);

/// whale-run's placement check: gathers the reports (collective), checks them on every rank and
/// returns them. Rank 0 throws the whale::Error of the first misplaced rank; the other ranks then
/// wait in a barrier that rank 0 never joins, for its error handler to end them all (one error
/// line).
std::vector<RankReport> check_placement_on_all_ranks(const plan::Plan& plan,
                                                     const RankLayout& layout, int rank,
                                                     DeviceCheck check);

}  // namespace whale::exec

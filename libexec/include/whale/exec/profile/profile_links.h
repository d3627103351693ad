// File: profile_links.h
// Link profiling (`mpirun -np N whale-profile --links`): ping-pong and all-reduce timed over a
// sweep of message sizes through a Communicator (MPI for host memory, NCCL for GPU memory),
// algbw/busbw by nccl-tests' definitions, and a latency + bandwidth fit written as the link
// section of a cluster YAML.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "whale/exec/comm/communicator.h"
#include "whale/exec/profile/profile_cache_flusher.h"
#include "whale/exec/profile/profile_device_prober.h"
#include "whale/exec/profile/profile_statistics.h"
#include "whale/plan/cluster.h"

namespace whale::exec {

/// A communicator plus a buffer in the memory it moves (host memory for MPI, device memory
/// for NCCL). Every Communicator call returns only once the transfer is complete.
class LinkEndpoint {
 public:
  virtual ~LinkEndpoint() = default;
  virtual Communicator& communicator() = 0;
  /// A buffer of at least `count` floats, valid until the next call.
  virtual float* buffer(std::size_t count) = 0;
  /// "mpi" or "nccl".
  virtual std::string transport() const = 0;
  /// The cluster link kind these ranks talk over ("shm", "ethernet", "nvlink", ...).
  virtual std::string link_kind() const = 0;
  /// True when every rank runs on the same host (the link is a node's intra_link).
  virtual bool single_host() const = 0;
};

/// Where this rank runs among the ranks of MPI_COMM_WORLD (by MPI processor name).
struct RankPlacement {
  bool single_host = true;  // every rank runs on this rank's host
  int local_rank = 0;       // index of this rank among the ranks on its host
};
/// Collective over MPI_COMM_WORLD. Requires MPI to be initialised.
RankPlacement world_rank_placement();

/// Collective over MPI_COMM_WORLD: rank 0 runs check_writable(path) and every rank throws the
/// same whale::Error when it fails, so that no rank starts measuring.
void check_writable_on_rank0(const std::string& path);

/// The endpoint for `device` over all ranks of the job. Requires MPI to be initialised.
/// Throws whale::Error when there are fewer than two ranks ("--links needs at least 2 ranks")
/// or, for CUDA, when no device is usable.
std::unique_ptr<LinkEndpoint> make_link_endpoint(const DeviceSpec& device);

struct LinkSweepOptions {
  bool quick = false;
  std::vector<Bytes> sizes_bytes;  // empty: the default sweep (8 B x4 .. 32 MiB; quick: x8 .. 2 MiB)
  /// Host-memory links: when set, every timed repetition starts as a collective or a send of
  /// training does, after compute: the caches flushed but for the message buffer, just written
  /// (read back), and the ranks met at a barrier; null: repetitions back to back on a hot
  /// buffer, as nccl-tests time them (NCCL over device memory). Must outlive the sweep.
  CacheFlusher* flusher = nullptr;
};

/// One message size of one operation, timed on rank 0.
struct LinkPoint {
  Bytes bytes = 0;
  Seconds time_s = 0;            // median; ping-pong: one way (half the round trip)
  double algbw_gbytes_per_s = 0; // bytes / time, 1e9 bytes per GB
  double busbw_gbytes_per_s = 0; // algbw x bus factor (all-reduce: 2(n-1)/n; p2p: 1)
};

struct LinkReport {
  std::string transport;
  std::string link_kind;
  bool single_host = true;
  int ranks = 0;
  std::vector<LinkPoint> ping_pong;   // rank 0 <-> rank 1
  std::vector<LinkPoint> all_reduce;  // all ranks
  LatencyBandwidthFit ping_pong_fit;
  LatencyBandwidthFit all_reduce_fit;  // time = latency + bytes / bandwidth (algbw asymptote)
};

/// Runs the sweep on every rank (collective: all ranks call it). The returned report is
/// complete on rank 0; `progress` is called on rank 0 only.
LinkReport measure_links(LinkEndpoint& endpoint, const LinkSweepOptions& options,
                         const ProgressFn& progress);

/// A point with its bandwidths computed from the raw time; used by measure_links and tests.
LinkPoint make_link_point(Bytes bytes, Seconds time_s, double bus_factor);

/// The link of the report: kind, and the ping-pong fit's bandwidth and latency.
plan::Link fitted_link(const LinkReport& report);

/// The link section of a cluster YAML: `intra_link:` (single host) or `network:` with kind,
/// bandwidth_gbps and latency_us, preceded by comment lines naming the measurement.
std::string link_section_yaml(const LinkReport& report);

/// The stdout table: one row per op and size (bytes, time_us, algbw, busbw), then the fits.
std::string link_table(const LinkReport& report);

}  // namespace whale::exec

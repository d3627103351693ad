// File: profile_links.cpp
// measure_links (the sweep, timed on rank 0), link points, the fitted link, its YAML section
// and the stdout table.
#include "whale/exec/profile/profile_links.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>

#include "whale/plan/error.h"
#include "profile/profile_text.h"

namespace whale::exec {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<Bytes> default_sizes(bool quick) {
  std::vector<Bytes> sizes;
  const Bytes largest = quick ? 4.0 * (1 << 20) : 64.0 * (1 << 20);
  for (Bytes b = 8; b <= largest; b *= quick ? 8 : 4) sizes.push_back(b);
  return sizes;
}

/// Timed iterations for a message: many for small ones, at least a few for large ones; fewer
/// when each starts with a cache flush, which writes tens of MiB and would otherwise make the
/// sweep of small messages take far longer than the transfers it times.
int iterations_for(Bytes bytes, bool quick, bool flushed) {
  const double budget_bytes = quick ? 32.0 * (1 << 20) : 256.0 * (1 << 20);
  const int most = flushed ? (quick ? 10 : 30) : (quick ? 30 : 100), fewest = quick ? 3 : 5;
  return static_cast<int>(std::clamp(budget_bytes / bytes, double(fewest), double(most)));
}

/// Every rank of `comm` waits for all the others (an all-reduce of one float in `cell`).
void barrier(Communicator& comm, float* cell) { comm.all_reduce_sum(cell, 1); }

/// How each timed repetition starts (LinkSweepOptions::flusher): nothing, or the caches flushed
/// but for the `count` floats of `data`, then a barrier so that every rank starts the transfer
/// together (the flush's own time stays outside the timing).
class RepetitionStart {
 public:
  RepetitionStart(Communicator& comm, CacheFlusher* flusher, const float* data, std::size_t count,
                  float* cell)
      : comm_(comm), cell_(cell) {
    if (flusher != nullptr) cold_ = flusher->cold_except(TimerOptions{}, {{data, count}}).before_sample;
  }
  void operator()() {
    if (!cold_) return;
    cold_();
    barrier(comm_, cell_);
  }

 private:
  Communicator& comm_;
  float* cell_;
  std::function<void()> cold_;
};

/// Median one-way time of a ping-pong of `count` floats between ranks 0 and 1 (rank 0's view).
Seconds ping_pong_s(Communicator& comm, float* data, std::size_t count, int iterations,
                    RepetitionStart& start_repetition) {
  const int warmup = 2;
  std::vector<double> one_way_s;
  for (int i = 0; i < warmup + iterations; ++i) {
    start_repetition();
    if (comm.rank() == 0) {
      const auto start = Clock::now();
      comm.send(data, count, 1, 0);
      comm.recv(data, count, 1, 1);
      const double round_trip = std::chrono::duration<double>(Clock::now() - start).count();
      if (i >= warmup) one_way_s.push_back(round_trip / 2);
    } else if (comm.rank() == 1) {
      comm.recv(data, count, 0, 0);
      comm.send(data, count, 0, 1);
    }
  }
  return comm.rank() == 0 ? median(one_way_s) : 0.0;
}

/// Median time of an in-place all-reduce of `count` floats over all ranks, every repetition on
/// the same buffer, which has just been written (by the repetition before, or read back after
/// the flush). Training reduces buffers just written too: a bucket of gradients right after the
/// backward that accumulated them, a tensor-parallel partial sum right after its GEMM; but the
/// rest of the caches (the transport's own buffers included) then hold the compute's data,
/// which the flush stands for. On a 2-core VM a buffer cycled through 256 MiB instead (cold
/// too) took 2.3x (13 MB) to 4x (128 KiB-2 MiB) as long as one just written
/// (docs/profile-tool.md).
Seconds all_reduce_s(Communicator& comm, float* data, std::size_t count, int iterations,
                     RepetitionStart& start_repetition) {
  const int warmup = 2;
  std::vector<double> times_s;
  for (int i = 0; i < warmup + iterations; ++i) {
    start_repetition();
    const auto start = Clock::now();
    comm.all_reduce_sum(data, count);
    const double t = std::chrono::duration<double>(Clock::now() - start).count();
    if (i >= warmup) times_s.push_back(t);
  }
  return median(times_s);
}

std::vector<TimedTransfer> transfers(const std::vector<LinkPoint>& points) {
  std::vector<TimedTransfer> out;
  for (const LinkPoint& p : points) out.push_back({p.bytes, p.time_s});
  return out;
}

std::string fit_line(const char* op, const LatencyBandwidthFit& fit) {
  return format("latency %.6g us, bandwidth %.6g Gbit/s (%.6g GB/s)", fit.latency_s * 1e6,
                bytes_per_s_to_gbps(fit.bandwidth_bytes_per_s),
                fit.bandwidth_bytes_per_s / 1e9)
      .insert(0, std::string(op) + " fit: ");
}

}  // namespace

LinkPoint make_link_point(Bytes bytes, Seconds time_s, double bus_factor) {
  LinkPoint p;
  p.bytes = bytes;
  p.time_s = time_s;
  p.algbw_gbytes_per_s = bytes / time_s / 1e9;
  p.busbw_gbytes_per_s = p.algbw_gbytes_per_s * bus_factor;
  return p;
}

LinkReport measure_links(LinkEndpoint& endpoint, const LinkSweepOptions& options,
                         const ProgressFn& progress) {
  Communicator& comm = endpoint.communicator();
  if (comm.size() < 2)
    throw Error("", "--links", "at least 2 ranks to time links, got 1",
                "run it as mpirun -np 2 whale-profile --links");
  LinkReport report;
  report.transport = endpoint.transport();
  report.link_kind = endpoint.link_kind();
  report.single_host = endpoint.single_host();
  report.ranks = comm.size();
  const std::vector<Bytes> sizes =
      options.sizes_bytes.empty() ? default_sizes(options.quick) : options.sizes_bytes;
  const std::size_t max_count =
      static_cast<std::size_t>(*std::max_element(sizes.begin(), sizes.end()) / sizeof(float));
  float* data = endpoint.buffer(max_count + 1);
  float* cell = data + max_count;
  const double bus = all_reduce_bus_factor(comm.size());
  const bool root = comm.rank() == 0;
  for (Bytes bytes : sizes) {
    const std::size_t count = std::max<std::size_t>(1, static_cast<std::size_t>(bytes / 4));
    const Bytes moved = 4.0 * count;
    const int iterations = iterations_for(moved, options.quick, options.flusher != nullptr);
    RepetitionStart start_repetition(comm, options.flusher, data, count, cell);
    barrier(comm, cell);
    const Seconds p2p_s = ping_pong_s(comm, data, count, iterations, start_repetition);
    barrier(comm, cell);
    const Seconds reduce_s = all_reduce_s(comm, data, count, iterations, start_repetition);
    if (!root) continue;
    report.ping_pong.push_back(make_link_point(moved, p2p_s, 1.0));
    report.all_reduce.push_back(make_link_point(moved, reduce_s, bus));
    progress(format("links %.0f B: ping-pong %.3f us (%.3f GB/s), all-reduce %.3f us", moved,
                    p2p_s * 1e6, report.ping_pong.back().algbw_gbytes_per_s, reduce_s * 1e6) +
             format(" (busbw %.3f GB/s)", report.all_reduce.back().busbw_gbytes_per_s));
  }
  if (root) {
    report.ping_pong_fit = fit_latency_bandwidth(transfers(report.ping_pong), "links.ping_pong");
    report.all_reduce_fit =
        fit_latency_bandwidth(transfers(report.all_reduce), "links.all_reduce");
  }
  return report;
}

plan::Link fitted_link(const LinkReport& report) {
  plan::Link link;
  link.kind = report.link_kind;
  link.bandwidth_bytes_per_s = report.ping_pong_fit.bandwidth_bytes_per_s;
  link.latency_s = report.ping_pong_fit.latency_s;
  return link;
}

std::string link_section_yaml(const LinkReport& report) {
  const plan::Link link = fitted_link(report);
  std::string text = format("# measured by whale-profile --links: %.0f ranks, ", report.ranks) +
                     report.transport + (report.single_host ? ", one host\n" : ", several hosts\n");
  text += "# " + fit_line("ping-pong", report.ping_pong_fit) + "\n";
  text += "# " + fit_line("all-reduce", report.all_reduce_fit) + "\n";
  text += report.single_host ? "intra_link:\n" : "network:\n";
  text += "  kind: " + link.kind + "\n";
  text += format("  bandwidth_gbps: %.6g\n", bytes_per_s_to_gbps(link.bandwidth_bytes_per_s));
  text += format("  latency_us: %.6g\n", link.latency_s * 1e6);
  return text;
}

std::string link_table(const LinkReport& report) {
  std::string text = format("# %.0f ranks, ", report.ranks) + report.transport + ", link " +
                     report.link_kind + "\n";
  char header[128];
  std::snprintf(header, sizeof header, "%-10s %12s %12s %12s %12s\n", "op", "bytes", "time_us",
                "algbw_GB/s", "busbw_GB/s");
  text += header;
  const auto rows = [&](const char* op, const std::vector<LinkPoint>& points) {
    for (const LinkPoint& p : points) {
      char row[160];
      std::snprintf(row, sizeof row, "%-10s %12.0f %12.3f %12.3f %12.3f\n", op, p.bytes,
                    p.time_s * 1e6, p.algbw_gbytes_per_s, p.busbw_gbytes_per_s);
      text += row;
    }
  };
  rows("ping-pong", report.ping_pong);
  rows("all-reduce", report.all_reduce);
  text += fit_line("ping-pong", report.ping_pong_fit) + "\n";
  text += fit_line("all-reduce", report.all_reduce_fit) + "\n";
  return text;
}

}  // namespace whale::exec

// File: test_profile_links.cpp
// Link points (algbw, busbw), the fitted link and its cluster-YAML section, on a hand-built report.
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "whale/exec/profile/profile_links.h"

using namespace whale::exec;

namespace {

LinkReport two_rank_report() {
  LinkReport report;
  report.transport = "mpi";
  report.link_kind = "shm";
  report.single_host = true;
  report.ranks = 2;
  report.ping_pong = {make_link_point(1e6, 1e-3, 1.0)};
  report.all_reduce = {make_link_point(1e6, 4e-3, all_reduce_bus_factor(2))};
  report.ping_pong_fit = {1.5e-6, 1.25e9};   // 10 Gbit/s
  report.all_reduce_fit = {3e-6, 2.5e8};     // 2 Gbit/s
  return report;
}

}  // namespace

TEST_CASE("link points: algbw = bytes / time, busbw = algbw x factor") {
  const LinkPoint p = make_link_point(1e6, 1e-3, 1.5);
  CHECK(p.algbw_gbytes_per_s == doctest::Approx(1.0));
  CHECK(p.busbw_gbytes_per_s == doctest::Approx(1.5));
}

TEST_CASE("the fitted link is the ping-pong fit") {
  const whale::plan::Link link = fitted_link(two_rank_report());
  CHECK(link.kind == "shm");
  CHECK(link.bandwidth_bytes_per_s == 1.25e9);
  CHECK(link.latency_s == 1.5e-6);
}

TEST_CASE("link section YAML of a single host is an intra_link") {
  CHECK(link_section_yaml(two_rank_report()) ==
        "# measured by whale-profile --links: 2 ranks, mpi, one host\n"
        "# ping-pong fit: latency 1.5 us, bandwidth 10 Gbit/s (1.25 GB/s)\n"
        "# all-reduce fit: latency 3 us, bandwidth 2 Gbit/s (0.25 GB/s)\n"
        "intra_link:\n"
        "  kind: shm\n"
        "  bandwidth_gbps: 10\n"
        "  latency_us: 1.5\n");
}

TEST_CASE("link section YAML of several hosts is a network link") {
  LinkReport report = two_rank_report();
  report.single_host = false;
  report.link_kind = "ethernet";
  const std::string yaml = link_section_yaml(report);
  CHECK(yaml.find("several hosts\n") != std::string::npos);
  CHECK(yaml.find("network:\n  kind: ethernet\n  bandwidth_gbps: 10\n") != std::string::npos);
  CHECK(yaml.find("intra_link") == std::string::npos);
}

TEST_CASE("link table lists every point and both fits") {
  const std::string table = link_table(two_rank_report());
  CHECK(table.find("# 2 ranks, mpi, link shm\n") == 0);
  CHECK(table.find("ping-pong       1000000     1000.000        1.000        1.000\n") !=
        std::string::npos);
  CHECK(table.find("all-reduce      1000000     4000.000        0.250        0.250\n") !=
        std::string::npos);
  CHECK(table.find("all-reduce fit: latency 3 us, bandwidth 2 Gbit/s (0.25 GB/s)\n") !=
        std::string::npos);
}

namespace {

/// Rank 0 of two, recording each call: "b" for a barrier (an all-reduce of one float), "r" for
/// an all-reduce of the message, "s" and "v" for a send and a receive; a message's transfers
/// take a microsecond per 16 floats (asleep), so that the sweep's fits see times that grow.
class RecordingCommunicator : public Communicator {
 public:
  std::string calls;
  int rank() const override { return 0; }
  int size() const override { return 2; }
  void all_reduce_sum(float*, std::size_t count) override {
    calls += count == 1 ? "b" : "r";
    if (count > 1) take_time(count);
  }
  std::unique_ptr<CommRequest> start_all_reduce_sum(float*, std::size_t) override { return nullptr; }
  std::unique_ptr<CommRequest> start_reduce_scatter_sum(float*, const std::vector<std::size_t>&) override {
    return nullptr;
  }
  void reduce_scatter_sum(const float*, float*, std::size_t) override {}
  void all_gather(const float*, float*, std::size_t) override {}
  void send(const float*, std::size_t count, int, int) override {
    calls += "s";
    take_time(count);
  }
  void recv(float*, std::size_t, int, int) override { calls += "v"; }
  std::unique_ptr<Communicator> subgroup(const std::vector<int>&) override { return nullptr; }

 private:
  static void take_time(std::size_t count) {
    std::this_thread::sleep_for(std::chrono::microseconds(count / 16));
  }
};

class RecordingEndpoint : public LinkEndpoint {
 public:
  RecordingCommunicator comm;
  std::vector<float> memory;
  Communicator& communicator() override { return comm; }
  float* buffer(std::size_t count) override {
    memory.assign(count, 1.0f);
    return memory.data();
  }
  std::string transport() const override { return "mpi"; }
  std::string link_kind() const override { return "shm"; }
  bool single_host() const override { return true; }
};

std::string repeated(const std::string& unit, int times) {
  std::string out;
  for (int i = 0; i < times; ++i) out += unit;
  return out;
}

}  // namespace

TEST_CASE("host link repetitions start after a flush and a barrier; without a flusher back to back") {
  LinkSweepOptions options;
  options.quick = true;
  // 1,024 and 16,384 floats: a quick sweep times 30 repetitions of each, 10 when flushed, after
  // 2 warm-ups.
  options.sizes_bytes = {4096, 65536};
  const ProgressFn quiet = [](const std::string&) {};
  SUBCASE("flushed") {
    CacheFlusher flusher(1 << 20);
    options.flusher = &flusher;
    RecordingEndpoint endpoint;
    const LinkReport report = measure_links(endpoint, options, quiet);
    CHECK(endpoint.comm.calls == repeated("b" + repeated("bsv", 12) + "b" + repeated("br", 12), 2));
    REQUIRE(report.all_reduce.size() == 2);
    CHECK(report.all_reduce[1].bytes == 65536);
  }
  SUBCASE("back to back") {
    RecordingEndpoint endpoint;
    measure_links(endpoint, options, quiet);
    CHECK(endpoint.comm.calls == repeated("b" + repeated("sv", 32) + "b" + repeated("r", 32), 2));
  }
}

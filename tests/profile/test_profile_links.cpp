// File: test_profile_links.cpp
// Link points (algbw, busbw), the fitted link and its cluster-YAML section, on a hand-built report.
#include <doctest/doctest.h>

#include <string>

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

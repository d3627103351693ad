// File: test_bridge.cpp
// bridge_transfers and bridge_source_device on hand-checked share layouts.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "whale/plan/bridge.h"
#include "whale/plan/error.h"

using whale::plan::bridge_source_device;
using whale::plan::bridge_transfers;
using whale::plan::BridgeTransfer;
using whale::plan::Stage;

namespace {

Stage stage_with(std::vector<int> shares, int tp = 1, int first_device = 0) {
  Stage s;
  s.tp = tp;
  s.shares = std::move(shares);
  for (size_t i = 0; i < s.shares.size() * tp; ++i)
    s.devices.push_back(first_device + static_cast<int>(i));
  return s;
}

bool same(const std::vector<BridgeTransfer>& a, const std::vector<BridgeTransfer>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].from_replica != b[i].from_replica || a[i].to_replica != b[i].to_replica ||
        a[i].first_sample != b[i].first_sample || a[i].samples != b[i].samples) {
      return false;
    }
  }
  return true;
}

}  // namespace

TEST_CASE("shares [3,2,1] -> [2,2,2] split along the sample axis") {
  // Senders own [0,3) [3,5) [5,6); receivers own [0,2) [2,4) [4,6).
  const std::vector<BridgeTransfer> expected = {
      {0, 0, 0, 2}, {0, 1, 2, 1}, {1, 1, 3, 1}, {1, 2, 4, 1}, {2, 2, 5, 1}};
  CHECK(same(bridge_transfers(stage_with({3, 2, 1}), stage_with({2, 2, 2})), expected));
  // Backwards, the same overlaps with the roles swapped.
  const std::vector<BridgeTransfer> reverse = {
      {0, 0, 0, 2}, {1, 0, 2, 1}, {1, 1, 3, 1}, {2, 1, 4, 1}, {2, 2, 5, 1}};
  CHECK(same(bridge_transfers(stage_with({2, 2, 2}), stage_with({3, 2, 1})), reverse));
}

TEST_CASE("equal shares give the identity") {
  const std::vector<BridgeTransfer> expected = {{0, 0, 0, 2}, {1, 1, 2, 3}};
  CHECK(same(bridge_transfers(stage_with({2, 3}), stage_with({2, 3})), expected));
}

TEST_CASE("dp 1 -> dp 4 scatters one sample to each replica") {
  const std::vector<BridgeTransfer> expected = {
      {0, 0, 0, 1}, {0, 1, 1, 1}, {0, 2, 2, 1}, {0, 3, 3, 1}};
  CHECK(same(bridge_transfers(stage_with({4}, 2), stage_with({1, 1, 1, 1})), expected));
  const std::vector<BridgeTransfer> gather = {
      {0, 0, 0, 1}, {1, 0, 1, 1}, {2, 0, 2, 1}, {3, 0, 3, 1}};
  CHECK(same(bridge_transfers(stage_with({1, 1, 1, 1}), stage_with({4})), gather));
}

TEST_CASE("stages holding different micro-batch sizes are an error") {
  try {
    bridge_transfers(stage_with({2, 2}), stage_with({3, 2}));
    FAIL("expected an error");
  } catch (const whale::Error& e) {
    CHECK(std::string(e.what()) ==
          "stages: adjacent stages whose shares sum to the same micro-batch size (4 vs 5)");
  }
}

TEST_CASE("a receiver's tp rank reads the sender's device of tp rank (rank % from.tp)") {
  const Stage from = stage_with({2, 2}, 2, 10);  // replica 0: 10 11, replica 1: 12 13
  CHECK(bridge_source_device(from, 0, 0) == 10);
  CHECK(bridge_source_device(from, 0, 1) == 11);
  CHECK(bridge_source_device(from, 1, 2) == 12);
  CHECK(bridge_source_device(from, 1, 3) == 13);
  const Stage no_tp = stage_with({4}, 1, 7);
  CHECK(bridge_source_device(no_tp, 0, 3) == 7);
  try {
    bridge_source_device(from, 2, 0);
    FAIL("expected an error");
  } catch (const whale::Error& e) {
    CHECK(std::string(e.what()) ==
          "stages: a replica 0..1 and a tp rank >= 0 (got replica 2, tp rank 0)");
  }
}

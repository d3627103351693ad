// File: test_host_bridge_abandon.cpp
// The host bridge's non-blocking requests over a host communicator whose collective never
// completes (a peer rank gone): destroying the request gives up after the bridge's bound and
// counts it abandoned, instead of waiting forever; a completed request uploads its result.
#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include "whale/exec/comm/host_bridge_communicator.h"
#include "whale/exec/comm/mpi_communicator.h"

using namespace whale::exec;

namespace {

/// A request whose collective never completes.
class PendingForever : public CommRequest {
 public:
  bool test() override { return false; }
  void wait() override { FAIL("wait() on a request whose peer is gone would never return"); }
};

/// A host communicator of two members whose non-blocking collectives never complete; the
/// blocking ones are those of one rank (SelfCommunicator).
class StalledHost : public SelfCommunicator {
 public:
  int size() const override { return 2; }
  std::unique_ptr<CommRequest> start_all_reduce_sum(float*, std::size_t) override {
    return std::make_unique<PendingForever>();
  }
};

}  // namespace

TEST_CASE("a bridge request whose peer is gone is abandoned, not waited for forever") {
  HostBridgeCommunicator bridge(std::make_unique<StalledHost>(), make_host_staging(),
                                /*abandon_after_s=*/0.0);
  std::vector<float> data = {1, 2, 3};
  auto request = bridge.start_all_reduce_sum(data.data(), data.size());
  CHECK_FALSE(request->test());
  CHECK(bridge.counts().downloaded_floats == 3);
  request.reset();  // returns: gives up at once with a bound of 0 s
  CHECK(bridge.counts().abandoned_requests == 1);
  CHECK(bridge.counts().uploaded_floats == 0);
  CHECK(data == std::vector<float>{1, 2, 3});  // the device data are left as they were
}

TEST_CASE("a completed bridge request uploads its result and abandons nothing") {
  HostBridgeCommunicator bridge(std::make_unique<SelfCommunicator>(), make_host_staging(), 0.0);
  std::vector<float> data = {4, 5};
  auto request = bridge.start_all_reduce_sum(data.data(), data.size());
  CHECK(request->test());
  request.reset();
  CHECK(bridge.counts().uploaded_floats == 2);
  CHECK(bridge.counts().abandoned_requests == 0);
}

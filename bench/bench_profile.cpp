// File: bench_profile.cpp
// Prints what whale-profile measures on this machine's CPU (quick sweep): GEMM GFLOP/s per size,
// copy bandwidth, launch cost and the layer op timings. A figure, never a test.
#include <cstdio>
#include <string>

#include "whale/exec/profile/profile_device_prober.h"

int main() {
  using namespace whale::exec;
  std::unique_ptr<DeviceProber> prober = make_device_prober(parse_device_spec("cpu"));
  ProbeOptions options;
  options.quick = true;
  options.name = "bench";
  std::printf("bench_profile: %s\n", prober->description().c_str());
  const ProbeResult result =
      prober->measure(options, [](const std::string& line) { std::printf("  %s\n", line.c_str()); });
  for (const OpTiming& t : result.op_timings)
    std::printf("  op %-30s median %10.3f us\n", t.name.c_str(), t.median_s * 1e6);
  return 0;
}

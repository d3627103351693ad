// File: profile_cpu_prober.h
// The CPU DeviceProber: it measures whale-run's CPU Backend (Eigen fp32 GEMM, copy), reads
// MemAvailable, times a tiny op call and one GPT layer's ops. Also the computed CPU peak.
#pragma once

#include <memory>
#include <string>

#include "whale/exec/profile/profile_device_prober.h"

namespace whale::exec {

/// The fp32 peak of the threads Eigen uses: threads x clock x flops per cycle of the vector
/// ISA Eigen was compiled for (lanes x 2 with FMA, x 2 vector ports). 0 when the clock is
/// unknown. `cpuinfo` is the text of /proc/cpuinfo (its first "cpu MHz" line is read).
struct CpuPeak {
  FlopsPerSecond flops_per_s = 0;
  std::string isa;            // "avx512+fma", "avx+fma", "avx", "sse"
  double clock_hz = 0;
  int threads = 1;
  double flops_per_cycle = 0;  // per thread
};
CpuPeak cpu_peak_from_cpuinfo(const std::string& cpuinfo);

/// MemAvailable of a /proc/meminfo text, in bytes; 0 when the line is missing.
Bytes mem_available_bytes(const std::string& meminfo);

std::unique_ptr<DeviceProber> make_cpu_prober();

}  // namespace whale::exec

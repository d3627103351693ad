// File: profile_device_prober.h
// DeviceProber: measures one device (GEMM sweep, memory bandwidth, usable memory, launch
// overhead, op timings) into a DeviceProfile in the schema whale-plan reads. The CPU and the
// CUDA implementations hide behind make_device_prober(); callers never ask "is it CUDA".
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "whale/plan/device_profile.h"
#include "whale/plan/units.h"

namespace whale::exec {

/// A device named on the command line: "cpu" or "cuda:N".
struct DeviceSpec {
  enum class Kind { cpu, cuda };
  Kind kind = Kind::cpu;
  int index = 0;  // the CUDA ordinal; 0 for the CPU
};

/// Parses "cpu", "cuda" (= cuda:0) or "cuda:N". Throws whale::Error naming `--device`, what
/// was given and the accepted forms otherwise.
DeviceSpec parse_device_spec(const std::string& text);

struct ProbeOptions {
  bool quick = false;      // a smaller sweep that runs in a few seconds
  std::string name;        // the profile's name (the file stem of the output)
  /// When set, the CPU prober calls it before every timed sample (TimerOptions::in_step):
  /// whale-profile --lockstep makes it a barrier of its MPI ranks (ProfileLockstep), so that each
  /// core times an op while the others time the same op, as data-parallel ranks run the same ops
  /// at once. Probers on other machines may make more or fewer calls (the cache sweep runs only
  /// where sysfs lists no cache); ProfileLockstep waits those out. The CUDA prober ignores it.
  std::function<void()> in_step;
};

/// The duration of one of the model's kernels, as recorded by the device's profiler.
struct OpTiming {
  std::string name;        // kernel name (demangled where possible)
  int calls = 0;
  Seconds median_s = 0;    // median duration of one call
  Seconds total_s = 0;     // sum over the calls
};

struct ProbeResult {
  plan::DeviceProfile profile;
  std::vector<OpTiming> op_timings;  // the model's ops (kernels), sorted by name
  std::string op_timing_source;      // how they were timed: "CUPTI kernel activity", ...
};

/// Receives one progress line (without newline) at a time; whale-profile prints them to stderr.
using ProgressFn = std::function<void(const std::string& line)>;

class DeviceProber {
 public:
  virtual ~DeviceProber() = default;
  /// One line naming the device, e.g. "cpu: Intel(R) Xeon(R) Processor, 1 thread".
  virtual std::string description() const = 0;
  /// The profile name used when no output path names it, e.g. "nvidia-h100-80gb-hbm3".
  virtual std::string default_name() const = 0;
  /// Runs every measurement and returns the profile (kind, source, peaks, efficiency curves,
  /// memory, bandwidth, launch overhead) plus op timings. Reports progress through `progress`.
  virtual ProbeResult measure(const ProbeOptions& options, const ProgressFn& progress) = 0;
};

/// The prober of `spec`. For CUDA, throws whale::Error "no CUDA device ..." when whale was built
/// without CUDA, when no device is present, or when the ordinal is out of range.
std::unique_ptr<DeviceProber> make_device_prober(const DeviceSpec& spec);

}  // namespace whale::exec

// File: kernel_times.h
// whale-run --kernel-times: the GPU time of every kernel that rank 0 launched in the timed steps
// (those after the run's first; the one step when it ran one), read from CUPTI's activity
// records, which are asynchronous (no kernel replay, no synchronization per kernel).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "whale/plan/units.h"

namespace whale::exec {

/// One kernel name's launches and GPU time over the timed steps.
struct KernelTime {
  std::string kernel;  // demangled, cut to kKernelNameChars
  int64_t launches = 0;
  Seconds total_s = 0;
};

constexpr std::size_t kKernelNameChars = 200;

/// `kernel,launches_per_step,ms_per_step,share`, then one row per kernel, the longest first;
/// per step = over `steps` timed steps; share of the kernels' summed time; kernel names quoted.
std::string format_kernel_times_csv(std::vector<KernelTime> times, int64_t steps);

/// Records rank 0's kernels over the timed steps of a run. Inactive (records nothing) when the
/// file is empty or on ranks other than 0.
class KernelTimesRecorder {
 public:
  /// On rank 0 (`root`), throws whale::Error (field --kernel-times) when a file is named and
  /// the rank runs no GPU (`device` is its backend's device name, "cuda:N" on a GPU) or
  /// whale-run was built without CUDA; the other ranks check nothing and record nothing.
  KernelTimesRecorder(std::string file, bool root, const std::string& device);
  ~KernelTimesRecorder();
  KernelTimesRecorder(const KernelTimesRecorder&) = delete;
  KernelTimesRecorder& operator=(const KernelTimesRecorder&) = delete;

  /// Before step `step` (0-based) of a run of steps first..last-1: starts recording at the
  /// first timed step.
  void before_step(int64_t step, int64_t first, int64_t last);
  /// After the last step: synchronizes the device, stops recording and writes the file
  /// atomically. Writes nothing when no step was recorded (a run stopped by a signal early).
  void finish();

 private:
  struct Impl;
  std::string file_;
  std::unique_ptr<Impl> impl_;
  int64_t steps_ = 0;
};

}  // namespace whale::exec

// File: kernel_times.cpp
// whale-run --kernel-times (kernel_times.h): CUPTI's kernel activity records of rank 0's timed
// steps, summed by kernel name and written as CSV.
#include "runtime/kernel_times.h"

#include <algorithm>
#include <iomanip>
#include <sstream>
#include <utility>

#include "whale/plan/atomic_file.h"
#include "whale/plan/error.h"

#if WHALE_HAVE_CUDA
#include <cuda_runtime.h>

#include "backend/cuda/cuda_check.h"
#include "profile/cuda/profile_cupti_collector.h"
#endif

namespace whale::exec {

std::string format_kernel_times_csv(std::vector<KernelTime> times, int64_t steps) {
  std::sort(times.begin(), times.end(), [](const KernelTime& a, const KernelTime& b) {
    return a.total_s != b.total_s ? a.total_s > b.total_s : a.kernel < b.kernel;
  });
  Seconds sum_s = 0;
  for (const KernelTime& t : times) sum_s += t.total_s;
  const double per_step = 1.0 / static_cast<double>(std::max<int64_t>(steps, 1));
  std::ostringstream csv;
  csv << "kernel,launches_per_step,ms_per_step,share\n";
  for (const KernelTime& t : times) {
    std::string quoted;
    for (char c : t.kernel) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    csv << '"' << quoted << "\"," << std::setprecision(6) << static_cast<double>(t.launches) * per_step
        << ',' << std::fixed << std::setprecision(4) << t.total_s * 1e3 * per_step << ','
        << (sum_s > 0 ? t.total_s / sum_s : 0.0) << std::defaultfloat << '\n';
  }
  return csv.str();
}

struct KernelTimesRecorder::Impl {
#if WHALE_HAVE_CUDA
  std::unique_ptr<KernelActivityCollector> collector;
#endif
};

KernelTimesRecorder::KernelTimesRecorder(std::string file, bool root, const std::string& device)
    : file_(std::move(file)) {
  if (file_.empty() || !root) return;
#if WHALE_HAVE_CUDA
  if (device.rfind("cuda", 0) != 0)
    throw Error("", "--kernel-times", "rank 0 on a GPU (its kernels are what is timed), got " + device,
                "give rank 0 a GPU in the plan, or run with --device gpu");
  impl_ = std::make_unique<Impl>();
#else
  throw Error("", "--kernel-times", "a whale-run built with CUDA, got one built without it (device " +
                                        device + ")",
              "rebuild whale with the CUDA Toolkit installed (docs/cuda-backend.md)");
#endif
}

KernelTimesRecorder::~KernelTimesRecorder() = default;

void KernelTimesRecorder::before_step(int64_t step, int64_t first, int64_t last) {
  if (!impl_) return;
  const int64_t start = last - first > 1 ? first + 1 : first;
  if (step < start) return;
#if WHALE_HAVE_CUDA
  if (!impl_->collector) {
    WHALE_CUDA_CHECK(cudaDeviceSynchronize());  // the untimed step's kernels stay out
    impl_->collector = std::make_unique<KernelActivityCollector>(kKernelNameChars);
  }
#endif
  ++steps_;
}

void KernelTimesRecorder::finish() {
  if (!impl_ || steps_ == 0) return;
  std::vector<KernelTime> times;
#if WHALE_HAVE_CUDA
  WHALE_CUDA_CHECK(cudaDeviceSynchronize());
  for (const OpTiming& t : impl_->collector->stop()) times.push_back({t.name, t.calls, t.total_s});
#endif
  AtomicFile out(file_, "--kernel-times");
  out.write(format_kernel_times_csv(std::move(times), steps_));
  out.commit();
}

}  // namespace whale::exec

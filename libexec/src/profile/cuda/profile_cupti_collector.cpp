// File: profile_cupti_collector.cpp
// CUPTI activity buffers: requested from and returned to CUPTI by two callbacks; the completed
// kernel records are appended to one process-wide list that stop() groups by kernel name.
#include "profile/cuda/profile_cupti_collector.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

#include "backend/cuda/cuda_check.h"
#include "whale/exec/profile/profile_statistics.h"

namespace whale::exec {
namespace {

// The kernel activity record of this CUPTI: CUpti_ActivityKernel10 from CUDA 13.0 (CUPTI API
// 130000, the xxyyzz numbering), CUpti_ActivityKernel9 in CUDA 12.x (API 19-28); the fields
// read here (name, start, end) are in both (cupti_activity.h, cupti_version.h).
#if CUPTI_API_VERSION >= 130000
using KernelActivity = CUpti_ActivityKernel10;
#else
using KernelActivity = CUpti_ActivityKernel9;
#endif

constexpr std::size_t kBufferBytes = 8 << 20;
constexpr std::size_t kAlignment = 8;

struct KernelRecord {
  std::string name;
  Seconds duration_s = 0;
};

std::mutex g_mutex;
std::vector<KernelRecord> g_records;
std::size_t g_max_name_chars = 96;

std::string demangled(const char* name) {
  if (name == nullptr) return "(unnamed kernel)";
  int status = 0;
  char* text = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string result = status == 0 && text != nullptr ? text : name;
  std::free(text);
  if (result.size() > g_max_name_chars) result = result.substr(0, g_max_name_chars - 3) + "...";
  return result;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kAlignment, kBufferBytes));
  *size = *buffer == nullptr ? 0 : kBufferBytes;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid_size) {
  CUpti_Activity* record = nullptr;
  std::lock_guard<std::mutex> lock(g_mutex);
  while (cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
        record->kind != CUPTI_ACTIVITY_KIND_KERNEL)
      continue;
    const auto* kernel = reinterpret_cast<const KernelActivity*>(record);
    g_records.push_back({demangled(kernel->name), (kernel->end - kernel->start) * 1e-9});
  }
  std::free(buffer);
}

}  // namespace

KernelActivityCollector::KernelActivityCollector(std::size_t max_name_chars) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_records.clear();
    g_max_name_chars = std::max<std::size_t>(max_name_chars, 4);
  }
  WHALE_CUPTI_CHECK(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
  WHALE_CUPTI_CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  active_ = true;
}

KernelActivityCollector::~KernelActivityCollector() {
  if (active_) cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
}

std::vector<OpTiming> KernelActivityCollector::stop() {
  WHALE_CUPTI_CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  WHALE_CUPTI_CHECK(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  active_ = false;
  std::map<std::string, std::vector<double>> by_name;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    for (const KernelRecord& r : g_records) by_name[r.name].push_back(r.duration_s);
    g_records.clear();
  }
  std::vector<OpTiming> timings;
  for (auto& [name, durations] : by_name) {
    OpTiming t;
    t.name = name;
    t.calls = static_cast<int>(durations.size());
    for (double d : durations) t.total_s += d;
    t.median_s = median(std::move(durations));
    timings.push_back(std::move(t));
  }
  return timings;
}

}  // namespace whale::exec

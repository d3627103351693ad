// File: host_heap.cpp
// keep_freed_host_memory (host_heap.h).
#include "whale/plan/host_heap.h"

#include <climits>  // first: it defines __GLIBC__ where glibc is the C library

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace whale::plan {

void keep_freed_host_memory() {
#if defined(__GLIBC__)
  constexpr int kMostMmapThreshold = 32 << 20;  // glibc's DEFAULT_MMAP_THRESHOLD_MAX on 64-bit
  mallopt(M_MMAP_THRESHOLD, kMostMmapThreshold);
  mallopt(M_TRIM_THRESHOLD, INT_MAX);
#endif
}

}  // namespace whale::plan

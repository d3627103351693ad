// File: host_heap.h
// How whale's tools keep the host memory they free for their next allocations.
#pragma once

namespace whale::plan {

/// Makes freed host blocks stay in the process for reuse (glibc: a fixed mmap threshold of
/// 32 MiB, the most its dynamic threshold reaches, and no trimming of the heap's top; elsewhere
/// than glibc it does nothing). By default glibc serves blocks above 128 KiB with fresh mappings
/// and raises that threshold only as such blocks are freed, and each return and re-take of
/// memory costs page faults:
/// - whale-run: step 1's tensors were unmapped, step 2's came from a heap that grew page by
///   page, and only step 3 ran on memory already touched (on a 2-core VM the data-parallel
///   fidelity plans ran step 2 at 1.3-1.9x their later steps; with this, as fast as steps 3-5);
/// - whale-plan: the searches allocate and free schedule programs of many megabytes thousands of
///   times (on 1,024 devices a tenth of its CPU time went to page faults);
/// - whale-profile: Eigen allocates its GEMM packing buffers per product, beyond 128 KiB, and
///   glibc served them as fresh pages every call (a 96-row panel of 128 outputs over 512 inputs,
///   the CPU backend's fc2 forward at width 128: 12 GFLOP/s against 133 with freed memory kept).
/// Call it once, first in main or before the first large allocation.
void keep_freed_host_memory();

}  // namespace whale::plan

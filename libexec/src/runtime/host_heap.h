// File: host_heap.h
// How whale-run's process keeps the host memory its steps free for the next step.
#pragma once

namespace whale::exec {

/// Makes freed host blocks stay in the process for reuse from the first step on (glibc: a fixed
/// mmap threshold of 32 MiB, the most its dynamic threshold reaches, and no trimming of the
/// heap's top). By default glibc serves blocks above 128 KiB with fresh mappings and raises that
/// threshold only as such blocks are freed, so step 1's tensors are unmapped, step 2's come from
/// a heap that grows page by page, and only step 3 runs on memory already touched: on a 2-core
/// VM the data-parallel fidelity plans ran step 2 at 1.3-1.9x their later steps; with this,
/// step 2 runs as fast as steps 3-5. Elsewhere than glibc it does nothing. Call it once, before
/// the run allocates.
void keep_freed_host_memory();

}  // namespace whale::exec

// File: cpu_parallel.h
// Private: WorkerPool, the CPU backend's one parallel loop, on threads that sleep (never spin)
// between loops, since ranks often share cores.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace whale::exec::cpu {

/// One per CpuBackend: the calling thread plus threads - 1 workers, created once.
class WorkerPool {
 public:
  /// threads >= 1 (1: no workers, every loop runs on the caller).
  explicit WorkerPool(int threads);
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;
  ~WorkerPool();  // wakes the workers and joins them

  int threads() const { return threads_; }

  /// Runs body(i) for every i in [0, n), thread t taking the contiguous range
  /// [n * t / threads, n * (t + 1) / threads); returns when all are done. Determinism contract
  /// for callers: iteration i writes only its own outputs and computes them in a fixed order,
  /// so results do not depend on the thread count. body must not throw nor call parallel_for.
  /// Loops from several calling threads run one at a time.
  void parallel_for(std::ptrdiff_t n, const std::function<void(std::ptrdiff_t)>& body);

 private:
  void run_range(int thread) const;
  void work(int thread);

  int threads_;
  std::vector<std::thread> workers_;
  std::mutex loop_mutex_;  // one loop at a time
  std::mutex mutex_;       // guards everything below
  std::condition_variable wake_, done_;
  std::uint64_t generation_ = 0;  // loops started; workers wait for it to change
  bool stop_ = false;
  const std::function<void(std::ptrdiff_t)>* body_ = nullptr;
  std::ptrdiff_t n_ = 0;
  int pending_ = 0;  // workers yet to finish the current loop
};

}  // namespace whale::exec::cpu

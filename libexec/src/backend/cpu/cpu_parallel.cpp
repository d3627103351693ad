// File: cpu_parallel.cpp
// The CPU backend's worker pool: workers sleep on a condition variable until parallel_for
// publishes a loop, run their contiguous range of it, and report back.
#include "backend/cpu/cpu_parallel.h"

#include <algorithm>

namespace whale::exec::cpu {

WorkerPool::WorkerPool(int threads) : threads_(std::max(1, threads)) {
  // generation_ is 0 before any worker starts: each waits for the first loop from 0, so a
  // loop published before a worker first takes the lock is not missed.
  for (int t = 1; t < threads_; ++t) workers_.emplace_back([this, t] { work(t); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& w : workers_) w.join();
}

void WorkerPool::parallel_for(std::ptrdiff_t n, const std::function<void(std::ptrdiff_t)>& body) {
  if (threads_ == 1 || n < 2) {
    for (std::ptrdiff_t i = 0; i < n; ++i) body(i);
    return;
  }
  std::lock_guard<std::mutex> one_loop(loop_mutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    body_ = &body;
    n_ = n;
    pending_ = threads_ - 1;
    ++generation_;
  }
  wake_.notify_all();
  run_range(0);
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [this] { return pending_ == 0; });
  body_ = nullptr;
}

void WorkerPool::run_range(int thread) const {
  const std::ptrdiff_t begin = n_ * thread / threads_, end = n_ * (thread + 1) / threads_;
  for (std::ptrdiff_t i = begin; i < end; ++i) (*body_)(i);
}

void WorkerPool::work(int thread) {
  std::uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    run_range(thread);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --pending_;
    }
    done_.notify_one();
  }
}

}  // namespace whale::exec::cpu

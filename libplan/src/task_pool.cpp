// File: task_pool.cpp
// run_tasks (task_pool.h).
#include "whale/plan/task_pool.h"

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <exception>
#include <thread>

#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace whale::plan {
namespace {

// Lowers the calling thread's scheduling priority by kHelperNiceIncrement (best effort: a
// failure leaves it as it was).
void lower_this_thread_priority() {
#ifdef __linux__
  const auto tid = static_cast<id_t>(syscall(SYS_gettid));
  errno = 0;
  const int nice = getpriority(PRIO_PROCESS, tid);
  if (errno == 0) setpriority(PRIO_PROCESS, tid, nice + kHelperNiceIncrement);
#endif
}

}  // namespace

void run_tasks(const std::vector<std::function<void()>>& tasks, int threads, Helpers helpers) {
  const bool first_here = helpers == Helpers::lower_priority && !tasks.empty();
  std::atomic<std::size_t> next{first_here ? 1u : 0u};
  std::vector<std::exception_ptr> errors(tasks.size());
  auto run = [&](std::size_t i) {
    try {
      tasks[i]();
    } catch (...) {
      errors[i] = std::current_exception();
    }
  };
  auto worker = [&] {
    for (std::size_t i = next++; i < tasks.size(); i = next++) run(i);
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads && t < static_cast<int>(tasks.size()); ++t) {
    pool.emplace_back([&] {
      if (first_here) lower_this_thread_priority();
      worker();
    });
  }
  if (first_here) run(0);
  worker();
  for (std::thread& t : pool) t.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace whale::plan

// File: task_pool.cpp
// run_tasks (task_pool.h).
#include "whale/plan/task_pool.h"

#include <atomic>
#include <cstddef>
#include <exception>
#include <thread>

namespace whale::plan {

void run_tasks(const std::vector<std::function<void()>>& tasks, int threads) {
  std::atomic<std::size_t> next{0};
  std::vector<std::exception_ptr> errors(tasks.size());
  auto worker = [&] {
    for (std::size_t i = next++; i < tasks.size(); i = next++) {
      try {
        tasks[i]();
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads && t < static_cast<int>(tasks.size()); ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace whale::plan

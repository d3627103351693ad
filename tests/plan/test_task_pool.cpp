// File: test_task_pool.cpp
// run_tasks (task_pool.h): every task runs once on one or two threads, a task's exception
// comes back to the caller after the others ran, and with helpers below the caller runs the
// first task and the threads it starts run at a lower priority.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <stdexcept>
#include <string>
#include <thread>

#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "whale/plan/task_pool.h"

using whale::plan::run_tasks;

namespace {

// The calling thread's nice value (0 where threads have none of their own).
int this_thread_nice() {
#ifdef __linux__
  errno = 0;
  return getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)));
#else
  return 0;
#endif
}

}  // namespace

TEST_CASE("run_tasks runs every task exactly once on one or two threads") {
  for (int threads : {1, 2, 4}) {
    std::vector<std::atomic<int>> runs(7);
    std::vector<std::function<void()>> tasks;
    for (std::size_t i = 0; i < runs.size(); ++i) tasks.push_back([&runs, i] { ++runs[i]; });
    run_tasks(tasks, threads);
    for (const std::atomic<int>& r : runs) CHECK(r.load() == 1);
  }
  run_tasks({}, 2);  // nothing to do
}

TEST_CASE("run_tasks rethrows the first failed task's exception after the others ran") {
  for (int threads : {1, 2}) {
    std::atomic<int> ran{0};
    const std::vector<std::function<void()>> tasks = {
        [&] { ++ran; },
        [&] { ++ran; throw std::runtime_error("second"); },
        [&] { ++ran; throw std::runtime_error("third"); },
        [&] { ++ran; }};
    std::string message;
    try {
      run_tasks(tasks, threads);
    } catch (const std::runtime_error& e) {
      message = e.what();
    }
    CHECK(message == "second");
    CHECK(ran.load() == 4);
  }
}

TEST_CASE("run_tasks with helpers below: the caller runs the first task, the started threads run lower") {
  using whale::plan::Helpers;
  for (int threads : {1, 2, 3}) {
    CAPTURE(threads);
    const std::thread::id caller = std::this_thread::get_id();
    const int caller_nice = this_thread_nice();
    std::vector<std::atomic<int>> runs(6);
    std::atomic<bool> first_here{false};
    std::atomic<int> helper_tasks{0}, helpers_lowered{0};
    std::vector<std::function<void()>> tasks;
    tasks.push_back([&] {
      ++runs[0];
      first_here = std::this_thread::get_id() == caller;
      // The started threads take the other tasks meanwhile: wait until one has.
      while (threads > 1 && helper_tasks.load() == 0) std::this_thread::yield();
    });
    for (std::size_t i = 1; i < runs.size(); ++i) {
      tasks.push_back([&, i] {
        ++runs[i];
        if (std::this_thread::get_id() == caller) return;
        if (this_thread_nice() == std::min(19, caller_nice + whale::plan::kHelperNiceIncrement)) ++helpers_lowered;
        ++helper_tasks;
      });
    }
    run_tasks(tasks, threads, Helpers::lower_priority);
    for (const std::atomic<int>& r : runs) CHECK(r.load() == 1);
    CHECK(first_here.load());
    CHECK(this_thread_nice() == caller_nice);   // the caller's own priority is left alone
#ifdef __linux__
    CHECK(helpers_lowered.load() == helper_tasks.load());
#endif
    CHECK((threads == 1 ? helper_tasks.load() == 0 : helper_tasks.load() > 0));
  }
}

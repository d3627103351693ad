// File: test_task_pool.cpp
// run_tasks (task_pool.h): every task runs once on one or two threads, and a task's exception
// comes back to the caller after the others ran.
#include <doctest/doctest.h>

#include <atomic>
#include <stdexcept>
#include <string>

#include "whale/plan/task_pool.h"

using whale::plan::run_tasks;

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

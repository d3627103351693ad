// File: task_pool.h
// run_tasks: independent tasks spread over a few threads, each thread taking the next task in
// order as it comes free. The planner uses it for searches that do not depend on each other
// (the main search, the baseline, the upper bound's per-model searches), so that no thread
// idles while another runs the longest of them alone.
#pragma once

#include <functional>
#include <vector>

namespace whale::plan {

/// How run_tasks schedules the threads it starts. `lower_priority`: this thread runs the first
/// task before any other and the started threads run below this thread's priority (Linux: a
/// nice value kHelperNiceIncrement higher; elsewhere as `same`), so that the first task (the
/// caller's longest, on whose result the rest waits) keeps its core while other searches of the
/// command compete for the cores; the others take what it leaves. Results do not depend on it.
enum class Helpers { same_priority, lower_priority };
inline constexpr int kHelperNiceIncrement = 10;

/// Runs every task of `tasks` once, on `threads` threads (>= 1; this thread is one of them),
/// and returns when all have finished. Tasks must not depend on each other's results or order.
/// An exception escaping a task is rethrown here once all have finished (the first in task
/// order); the other tasks still run.
void run_tasks(const std::vector<std::function<void()>>& tasks, int threads,
               Helpers helpers = Helpers::same_priority);

}  // namespace whale::plan

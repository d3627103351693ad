// File: ops_slowdown.h
// Private: a Backend decorator that emulates a device `factor` times slower: after each
// compute op it waits (factor - 1) times the op's measured duration. Memory ops pass through.
#pragma once

#include <functional>
#include <memory>

#include "whale/exec/backend/backend.h"

namespace whale::exec {

/// How the decorator measures an op and waits: `now_s` is a monotonic clock in seconds and
/// `wait_s` blocks for the given seconds. steady_wait() is the real one (std::chrono's steady
/// clock and a thread sleep); tests pass fakes to check the exact wait.
struct SlowdownClock {
  std::function<double()> now_s;
  std::function<void(double)> wait_s;
};
SlowdownClock steady_wait();

/// Returns `inner` itself when factor <= 1. Each compute op is followed by a synchronize of
/// `inner` and then by clock.wait_s((factor - 1) * its duration), its duration being the
/// clock's time from before the op to after the synchronize; memory ops never wait.
std::unique_ptr<Backend> make_slowed_backend(std::unique_ptr<Backend> inner, double factor,
                                             SlowdownClock clock = steady_wait());

}  // namespace whale::exec

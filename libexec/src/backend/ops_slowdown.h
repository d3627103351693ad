// File: ops_slowdown.h
// Private: a Backend decorator that emulates a device `factor` times slower: after each
// compute op it waits (factor - 1) times the op's measured duration. Memory ops pass through.
#pragma once

#include <memory>

#include "whale/exec/backend/backend.h"

namespace whale::exec {

/// Returns `inner` itself when factor <= 1.
std::unique_ptr<Backend> make_slowed_backend(std::unique_ptr<Backend> inner, double factor);

}  // namespace whale::exec

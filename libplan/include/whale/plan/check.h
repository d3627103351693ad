// File: check.h
// WHALE_CHECK: internal invariants that stay checked in Release builds. A failed check is a
// bug, not bad input: it throws whale::InternalError, which every main reports as an
// "internal error" with exit code 3.
#pragma once

#include <stdexcept>
#include <string>

namespace whale {

/// A broken internal invariant (a bug in whale). what() is one line:
///   "FILE:LINE: CONDITION: MESSAGE".
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

/// Throws InternalError naming the source location, the failed condition and `message`.
[[noreturn]] void check_failed(const char* file, int line, const char* condition,
                               const std::string& message);

}  // namespace whale

/// Checks `cond` in every build type; `message` (a std::string expression) is evaluated only
/// when the check fails.
#define WHALE_CHECK(cond, message)                                     \
  do {                                                                 \
    if (!(cond)) ::whale::check_failed(__FILE__, __LINE__, #cond, (message)); \
  } while (0)

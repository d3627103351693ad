// File: tool_boundary.h
// The error boundary of the four tools: runs a tool's body and turns whatever escapes into one
// line on stderr and an exit code. Every main goes through it, so all report alike.
#pragma once

#include <functional>
#include <string>

namespace whale {

/// Exit codes of every whale tool.
inline constexpr int kExitOk = 0;
inline constexpr int kExitBadInput = 2;  // whale::Error: bad input, the user can fix it
inline constexpr int kExitInternal = 3;  // anything else: a bug in whale

/// Runs `body` and returns its exit code. If it throws, prints one line to stderr and returns:
///   whale::Error        -> "TOOL: error: WHO WHAT"                           -> kExitBadInput
///   std::bad_alloc      -> "TOOL: error: WHO out of memory (hint: ...)"      -> kExitBadInput
///   anything else       -> "TOOL: internal error: WHO WHAT (please report this)" -> kExitInternal
/// `who` names the process among several (e.g. "rank 3"); empty for a single process.
int run_guarded(const std::string& tool, const std::function<int()>& body,
                const std::string& who = "");

}  // namespace whale

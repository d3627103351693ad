// File: tool_main.h
// What the four mains share: the command line parsed inside the error boundary (a malformed
// command line is bad input, exit 2) and validators whose messages print readable bounds.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace whale::app {

/// Parses the command line, then runs `body`, both under whale::run_guarded: --help prints
/// and returns 0; a malformed command line prints one line ("TOOL: error: WHAT (hint: see
/// TOOL --help)") and returns kExitBadInput; the rest as run_guarded documents.
int run_tool(const std::string& tool, CLI::App& app, int argc, char** argv,
             const std::function<int()>& body);

/// Keeps freed memory in the process instead of returning it to the system (glibc's malloc;
/// elsewhere nothing): the searches allocate and free schedule programs of many megabytes
/// thousands of times, and each return and re-take costs page faults (whale-plan on 1,024
/// devices spent a tenth of its CPU time in them); Eigen allocates its GEMM packing buffers per
/// product, on the heap beyond 128 KiB, and in whale-profile's GEMM sweep glibc served them as
/// fresh pages every call (a 96-row panel of 128 outputs over 512 inputs, the CPU backend's fc2
/// forward at width 128: 12 GFLOP/s against 133 with freed memory kept). whale-run, whose
/// buffers recur from the first step, ran the same model 4% faster with it, at 14-21% more peak
/// memory, and does without. Call first in main.
void keep_freed_memory();

/// A finite number in [low, high]; the message names the bounds in %.15g form.
CLI::Validator number_in(double low, double high);
/// A finite number in (low, high].
CLI::Validator number_above(double low, double high);

/// An output file's name: not empty (an empty one would write nothing, silently).
CLI::Validator output_file();

/// Throws whale::Error when two of `outputs` ((option, path) pairs; empty paths skipped) name
/// the same file, by name or on disk, so that one would overwrite the other. Character devices
/// such as /dev/null may repeat.
void check_distinct_outputs(const std::vector<std::pair<std::string, std::string>>& outputs);

}  // namespace whale::app

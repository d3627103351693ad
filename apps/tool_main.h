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


/// A finite number in [low, high]; the message names the bounds in %.15g form.
CLI::Validator number_in(double low, double high);
/// A finite number in (low, high].
CLI::Validator number_above(double low, double high);

/// An output file's name: not empty (an empty one would write nothing, silently).
CLI::Validator output_file();

/// An input folder that exists (a folder of device profiles, say).
CLI::Validator existing_folder();

/// Throws whale::Error when two of `outputs` ((option, path) pairs; empty paths skipped) name
/// the same file, by name or on disk, so that one would overwrite the other. Character devices
/// such as /dev/null may repeat.
void check_distinct_outputs(const std::vector<std::pair<std::string, std::string>>& outputs);

}  // namespace whale::app

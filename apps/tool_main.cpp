// File: tool_main.cpp
// run_tool and the readable range validators of the four mains.
#include "tool_main.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <unistd.h>

#include "whale/plan/error.h"
#include "whale/plan/tool_boundary.h"

namespace whale::app {
namespace {

std::string format_number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.15g", value);
  return text;
}

/// The validator: parses `input` as a number and checks it against [low, high] or (low, high].
CLI::Validator bounded(double low, double high, bool open_low) {
  const std::string range = (open_low ? "a number > " : "a number >= ") + format_number(low) +
                            " and <= " + format_number(high);
  return CLI::Validator(
      [=](std::string& input) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(input.c_str(), &end);
        const bool parsed = !input.empty() && end && *end == '\0';
        const bool inside = std::isfinite(value) && (open_low ? value > low : value >= low) &&
                            value <= high;
        if (parsed && inside) return "";
        return "expected " + range + ", got '" + input + "'";
      },
      range);
}

}  // namespace

CLI::Validator number_in(double low, double high) { return bounded(low, high, false); }
CLI::Validator number_above(double low, double high) { return bounded(low, high, true); }

CLI::Validator output_file() {
  return CLI::Validator(
      [](std::string& input) -> std::string {
        if (input.empty()) return "expected a file name, got an empty one";
        // Checked before any work: a long search or run must not end unable to write its result.
        namespace fs = std::filesystem;
        const fs::path folder = fs::path(input).parent_path().empty() ? fs::path(".")
                                                                      : fs::path(input).parent_path();
        std::error_code ec;
        if (!fs::is_directory(folder, ec))
          return "expected a file in an existing folder, got '" + input + "' whose folder '" +
                 folder.string() + "' does not exist: create the folder first";
        if (fs::is_directory(input, ec))
          return "expected a file, got the folder '" + input + "': name a file inside it";
        return "";
      },
      "FILE");
}

CLI::Validator existing_folder() {
  return CLI::Validator(
      [](std::string& input) -> std::string {
        std::error_code ec;
        if (std::filesystem::is_directory(input, ec)) return "";
        return "expected an existing folder, got '" + input + "'" +
               (std::filesystem::exists(input, ec) ? ", which is a file" : ", which does not exist");
      },
      "FOLDER");
}

void check_distinct_outputs(const std::vector<std::pair<std::string, std::string>>& outputs) {
  namespace fs = std::filesystem;
  const auto identity = [](const std::string& path) {
    std::error_code ec;
    const fs::path canonical = fs::weakly_canonical(fs::path(path), ec);
    return ec ? fs::path(path).lexically_normal() : canonical;
  };
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const auto& [option, path] = outputs[i];
    std::error_code ec;
    if (path.empty() || fs::is_character_file(path, ec)) continue;
    for (std::size_t j = 0; j < i; ++j) {
      if (outputs[j].second.empty() || identity(outputs[j].second) != identity(path)) continue;
      throw Error(path, option, "a file of its own, got the file " + outputs[j].first + " writes",
                  "one would overwrite the other; give each output its own file");
    }
  }
}

int run_tool(const std::string& tool, CLI::App& app, int argc, char** argv,
             const std::function<int()>& body) {
  return run_guarded(tool, [&]() -> int {
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      if (e.get_exit_code() == 0) return app.exit(e);  // --help
      throw Error("", "", e.what(), "see " + tool + " --help");  // what() names the option
    }
    return body();
  });
}

}  // namespace whale::app

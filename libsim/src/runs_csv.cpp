// File: runs_csv.cpp
// Reads and checks the CSV of measured runs (runs_csv.h).
#include "whale/sim/runs_csv.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "whale/plan/error.h"
#include "whale/plan/text_file.h"
#include "whale/plan/units.h"

namespace whale::sim {
namespace {

const char* const kHeader = "plan,step_time_s,peak_memory_gib,failed";
const char* const kColumns[] = {"plan", "step_time_s", "peak_memory_gib", "failed"};

/// Where a field sits, for the error: "line 3, column 2 (step_time_s)".
std::string where(int line, int column) {
  return "line " + std::to_string(line) + ", column " + std::to_string(column) + " (" +
         kColumns[column - 1] + ")";
}

std::vector<std::string> split_fields(const std::string& row) {
  std::vector<std::string> fields;
  std::stringstream in(row);
  std::string field;
  while (std::getline(in, field, ',')) fields.push_back(field);
  if (!row.empty() && row.back() == ',') fields.emplace_back();
  return fields;
}

std::string trimmed(const std::string& s) {
  const std::size_t first = s.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

/// An empty field is absent; otherwise a finite number > 0.
std::optional<double> optional_positive(const std::string& path, int line, int column,
                                        const std::string& text, const std::string& unit) {
  if (text.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (*end != '\0' || errno != 0 || !std::isfinite(value) || value <= 0) {
    throw Error(path, where(line, column),
                "expected a number > 0 (" + unit + ") or nothing, got '" + text + "'",
                "leave the field empty when it was not measured");
  }
  return value;
}

bool parse_failed(const std::string& path, int line, const std::string& text) {
  if (text.empty() || text == "false") return false;
  if (text == "true") return true;
  throw Error(path, where(line, 4), "expected true, false or nothing, got '" + text + "'",
              "true marks a run that ran out of memory");
}

MeasuredRun parse_row(const std::string& path, const std::string& folder, int line,
                      const std::string& row) {
  std::vector<std::string> fields = split_fields(row);
  if (fields.size() != 4) {
    throw Error(path, "line " + std::to_string(line),
                "expected 4 comma-separated fields (" + std::string(kHeader) + "), got " +
                    std::to_string(fields.size()),
                "leave unmeasured fields empty, e.g. 'plan.yaml,0.25,,'");
  }
  for (std::string& f : fields) f = trimmed(f);
  MeasuredRun run;
  run.line = line;
  if (fields[0].empty()) throw Error(path, where(line, 1), "expected a plan path, got nothing",
                                        "the first field names the plan file the run measured");
  run.plan_field = fields[0];
  run.plan_path = fields[0][0] == '/' || folder.empty() ? fields[0] : folder + "/" + fields[0];
  run.step_time_s = optional_positive(path, line, 2, fields[1], "seconds");
  const std::optional<double> gib = optional_positive(path, line, 3, fields[2], "GiB");
  if (gib) run.peak_memory_bytes = *gib * kBytesPerGiB;
  run.failed = parse_failed(path, line, fields[3]);
  if (run.failed && run.step_time_s) {
    throw Error(path, where(line, 2), "no step time in a failed run",
                "a run that ran out of memory has no step time: leave it empty");
  }
  if (!run.failed && !run.step_time_s && !run.peak_memory_bytes) {
    throw Error(path, "line " + std::to_string(line),
                "a step time, a peak memory or failed=true: the row measures nothing",
                "fill in what the run measured or remove the row");
  }
  return run;
}

}  // namespace

std::vector<MeasuredRun> load_runs_csv(const std::string& path) {
  const std::string text = plan::read_text_file(path, "CSV");
  const std::size_t slash = path.find_last_of('/');
  const std::string folder = slash == std::string::npos ? "" : path.substr(0, slash);
  std::stringstream in(text);
  std::string row;
  std::vector<MeasuredRun> runs;
  bool header_seen = false;
  for (int line = 1; std::getline(in, row); ++line) {
    const std::string content = trimmed(row);
    if (content.empty() || content[0] == '#') continue;
    if (!header_seen) {
      if (content != kHeader) {
        throw Error(path, "line " + std::to_string(line),
                    "the header '" + std::string(kHeader) + "', got '" + content + "'",
                    "the first line that is not blank or a comment names the columns");
      }
      header_seen = true;
      continue;
    }
    runs.push_back(parse_row(path, folder, line, content));
  }
  if (runs.empty()) {
    throw Error(path, "", "at least one run after the header, got none",
                "add a row per measured plan: plan,step_time_s,peak_memory_gib,failed");
  }
  return runs;
}

}  // namespace whale::sim

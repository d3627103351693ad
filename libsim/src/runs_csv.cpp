// File: runs_csv.cpp
// Reads and checks the CSV of measured runs (runs_csv.h).
#include "whale/sim/runs_csv.h"

#include "csv_rows.h"
#include "whale/plan/error.h"
#include "whale/plan/limits.h"
#include "whale/plan/units.h"

namespace whale::sim {
namespace {

const std::vector<std::string> kColumns = {"plan", "step_time_s", "peak_memory_gib", "failed"};
// The range of each number (docs/calibrate.md). A step of a day is beyond any training step
// (more is a unit mix-up: milliseconds, microseconds); the peak is at most whale's limit on
// device memory (docs/limits.md), and calibrate() holds it against the plan's devices.
constexpr CsvRange kStepTime{"seconds", 86400};
constexpr CsvRange kPeakMemory{"GiB", plan::kMaxMemoryGib};

bool parse_failed(const std::string& path, const CsvRow& row) {
  const std::string& text = row.fields[3];
  if (text.empty() || text == "false") return false;
  if (text == "true") return true;
  throw Error(path, csv_where(row.line, 4, kColumns), "expected true, false or nothing, got '" + text + "'",
              "true marks a run that ran out of memory");
}

MeasuredRun parse_row(const std::string& path, const std::string& folder, const CsvRow& row) {
  const std::vector<std::string>& fields = row.fields;
  const int line = row.line;
  MeasuredRun run;
  run.line = line;
  if (fields[0].empty()) throw Error(path, csv_where(line, 1, kColumns), "expected a plan path, got nothing",
                                        "the first field names the plan file the run measured");
  run.plan_field = fields[0];
  run.plan_path = fields[0][0] == '/' || folder.empty() ? fields[0] : folder + "/" + fields[0];
  const std::string unmeasured = "leave the field empty when it was not measured";
  run.step_time_s = csv_positive(path, row, 2, kColumns, kStepTime, true, unmeasured);
  const std::optional<double> gib = csv_positive(path, row, 3, kColumns, kPeakMemory, true, unmeasured);
  if (gib) run.peak_memory_bytes = *gib * kBytesPerGiB;
  run.failed = parse_failed(path, row);
  if (run.failed && run.step_time_s) {
    throw Error(path, csv_where(line, 2, kColumns), "no step time in a failed run",
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
  const std::size_t slash = path.find_last_of('/');
  const std::string folder = slash == std::string::npos ? "" : path.substr(0, slash);
  std::vector<MeasuredRun> runs;
  for (const CsvRow& row : read_csv_rows(path, kColumns, "run", "leave unmeasured fields empty, e.g. 'plan.yaml,0.25,,'",
                                         "add a row per measured plan: plan,step_time_s,peak_memory_gib,failed")) {
    runs.push_back(parse_row(path, folder, row));
  }
  return runs;
}

}  // namespace whale::sim

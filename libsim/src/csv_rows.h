// File: csv_rows.h
// The plain CSV that whale-calibrate reads (runs_csv.h, layer_times_csv.h): comma-separated
// fields without quoting, blank and '#' lines skipped, one header line. Errors name the file,
// the line and the column. Private to libsim.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace whale::sim {

/// A data row: its line in the file (from 1) and its trimmed fields.
struct CsvRow {
  int line = 0;
  std::vector<std::string> fields;
};

/// The data rows of the CSV at `path` (read as `what`, e.g. "CSV"), each with exactly as many
/// fields as `columns`. Throws whale::Error for a header other than the columns joined by
/// commas, for a row with another number of fields (hint: `row_hint`) and for a file without
/// rows ("at least one `row_noun` after the header", hint: `empty_hint`).
std::vector<CsvRow> read_csv_rows(const std::string& path, const std::vector<std::string>& columns,
                                  const std::string& row_noun, const std::string& row_hint,
                                  const std::string& empty_hint);

/// Where a field sits, for an error: "line 3, column 2 (step_time_s)".
std::string csv_where(int line, int column, const std::vector<std::string>& columns);

/// The range of a CSV number: (0, high] in `unit`.
struct CsvRange {
  const char* unit;  // "seconds", "GiB", "samples"
  double high;
};

/// An empty field is absent; otherwise a finite number in (0, range.high], or whale::Error at
/// (line, column) saying "a number > 0 and <= HIGH (unit)" (plus " or nothing" when `optional`)
/// with `hint`.
std::optional<double> csv_positive(const std::string& path, const CsvRow& row, int column,
                                   const std::vector<std::string>& columns, const CsvRange& range,
                                   bool optional, const std::string& hint);

}  // namespace whale::sim

// File: csv_rows.cpp
// The plain CSV reader of whale-calibrate's inputs (csv_rows.h).
#include "csv_rows.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "whale/plan/error.h"
#include "whale/plan/text_file.h"

namespace whale::sim {
namespace {

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

std::string joined(const std::vector<std::string>& columns) {
  std::string out;
  for (std::size_t i = 0; i < columns.size(); ++i) out += (i ? "," : "") + columns[i];
  return out;
}

}  // namespace

std::string csv_where(int line, int column, const std::vector<std::string>& columns) {
  return "line " + std::to_string(line) + ", column " + std::to_string(column) + " (" +
         columns.at(column - 1) + ")";
}

std::vector<CsvRow> read_csv_rows(const std::string& path, const std::vector<std::string>& columns,
                                  const std::string& row_noun, const std::string& row_hint,
                                  const std::string& empty_hint) {
  const std::string header = joined(columns);
  std::stringstream in(plan::read_text_file(path, "CSV"));
  std::string text;
  std::vector<CsvRow> rows;
  bool header_seen = false;
  for (int line = 1; std::getline(in, text); ++line) {
    const std::string content = trimmed(text);
    if (content.empty() || content[0] == '#') continue;
    if (!header_seen) {
      if (content != header) {
        throw Error(path, "line " + std::to_string(line),
                    "the header '" + header + "', got '" + content + "'",
                    "the first line that is not blank or a comment names the columns");
      }
      header_seen = true;
      continue;
    }
    CsvRow row{line, split_fields(content)};
    if (row.fields.size() != columns.size()) {
      throw Error(path, "line " + std::to_string(line),
                  "expected " + std::to_string(columns.size()) + " comma-separated fields (" + header +
                      "), got " + std::to_string(row.fields.size()),
                  row_hint);
    }
    for (std::string& f : row.fields) f = trimmed(f);
    rows.push_back(std::move(row));
  }
  if (rows.empty()) throw Error(path, "", "at least one " + row_noun + " after the header, got none", empty_hint);
  return rows;
}

std::optional<double> csv_positive(const std::string& path, const CsvRow& row, int column,
                                   const std::vector<std::string>& columns, const CsvRange& range,
                                   bool optional, const std::string& hint) {
  const std::string& text = row.fields.at(column - 1);
  if (text.empty() && optional) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno != 0 || !std::isfinite(value) || value <= 0 || value > range.high) {
    char high[32];
    std::snprintf(high, sizeof high, "%.15g", range.high);
    throw Error(path, csv_where(row.line, column, columns),
                std::string("expected a number > 0 and <= ") + high + " (" + range.unit + ")" +
                    (optional ? " or nothing" : "") + ", got '" + text + "'",
                hint);
  }
  return value;
}

}  // namespace whale::sim

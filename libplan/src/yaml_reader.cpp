// File: yaml_reader.cpp
// The strict YAML reader: type, key and range checks with file + YAML path in every error.
#include "yaml_reader.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>
#include <string_view>

#include <yaml-cpp/depthguard.h>

#include "whale/plan/error.h"
#include "whale/plan/text_file.h"
#include "yaml_writer.h"

namespace whale::plan {
namespace {

constexpr double kMaxMagnitude = 1e30;
constexpr int kMaxYamlDepth = 2000;  // yaml-cpp's DeepRecursion limit (yaml-cpp/depthguard.h)

std::string line_suffix(const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  if (mark.is_null() || mark.line < 0) return "";
  return " (line " + std::to_string(mark.line + 1) + ")";
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

std::string describe(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "nothing";
  if (node.IsMap()) return "a mapping";
  if (node.IsSequence()) return "a list";
  return "'" + node.Scalar() + "'";
}

}  // namespace

std::string YamlField::key_path(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

void YamlField::fail(const std::string& expected, const std::string& hint) const {
  throw Error(file_, path_, expected + line_suffix(node_), hint);
}

void YamlField::expect_keys(const std::vector<std::string>& allowed) const {
  if (!node_.IsMap()) fail("expected a mapping, got " + describe(node_), "keys such as " + join(allowed));
  std::vector<std::string> seen;
  for (const auto& entry : node_) {
    const std::string key = entry.first.Scalar();
    for (const std::string& s : seen) {
      if (s == key) YamlField(entry.first, file_, key_path(key)).fail("key '" + key + "' is given twice", "keep one of them");
    }
    seen.push_back(key);
    bool known = false;
    for (const std::string& a : allowed) known = known || a == key;
    if (!known) {
      YamlField(entry.first, file_, key_path(key))
          .fail("unknown key '" + key + "'", "allowed keys: " + join(allowed));
    }
  }
}

bool YamlField::has(const std::string& key) const {
  return node_.IsMap() && node_[key].IsDefined();
}

YamlField YamlField::get(const std::string& key) const {
  if (!node_.IsMap()) fail("expected a mapping with '" + key + "', got " + describe(node_));
  YAML::Node child = node_[key];
  if (!child.IsDefined()) {
    throw Error(file_, key_path(key), "missing field '" + key + "'" + line_suffix(node_),
                "add '" + key + ":' to " + (path_.empty() ? "the top level" : path_));
  }
  return YamlField(child, file_, key_path(key));
}

std::vector<std::string> YamlField::keys() const {
  if (!node_.IsMap()) fail("expected a mapping, got " + describe(node_));
  std::vector<std::string> out;
  for (const auto& entry : node_) out.push_back(entry.first.Scalar());
  return out;
}

std::vector<YamlField> YamlField::elements() const {
  if (!node_.IsSequence()) fail("expected a list, got " + describe(node_), "one '- ' line per entry, or [a, b]");
  std::vector<YamlField> out;
  for (std::size_t i = 0; i < node_.size(); ++i) {
    out.emplace_back(node_[i], file_, path_ + "[" + std::to_string(i) + "]");
  }
  return out;
}

std::string YamlField::text() const {
  if (!node_.IsScalar()) fail("expected a string, got " + describe(node_));
  return node_.Scalar();
}

const std::string& YamlField::numeric_text(const std::string& expected) const {
  if (!node_.IsScalar()) fail(expected + ", got " + describe(node_));
  return node_.Scalar();
}

double YamlField::number() const {
  const std::string& s = numeric_text("expected a number");
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0') {
    fail("expected a number, got '" + s + "'", "a decimal number such as 12.5, without a unit");
  }
  if (std::isnan(value)) fail("expected a number, got '" + s + "'", "NaN is not a quantity: give the value");
  // No quantity whale reads comes near 1e30 in its unit (bytes, FLOP/s, GiB, seconds); larger
  // ones are typos, and would overflow to infinity once converted. An overflow of the double
  // itself (1e400) reads as infinity and fails here too.
  if (std::fabs(value) > kMaxMagnitude) {
    fail("expected a number of magnitude at most 1e30, got '" + s + "'", "check the unit");
  }
  if (errno == ERANGE) fail("expected a number, got '" + s + "'", "too close to zero for a double: write 0");
  return value;
}

double YamlField::positive_number() const {
  const double value = number();
  if (!(value > 0)) fail("expected a positive number, got '" + node_.Scalar() + "'");
  return value;
}

double YamlField::number_in(double least, double most, const std::string& hint) const {
  const double value = number();
  if (!(value >= least && value <= most)) {
    fail("expected a number in [" + format_number(least) + ", " + format_number(most) + "], got '" + node_.Scalar() + "'",
         hint);
  }
  return value;
}

double YamlField::non_negative_number() const {
  const double value = number();
  if (value < 0) fail("expected a number >= 0, got '" + node_.Scalar() + "'");
  return value;
}

int YamlField::integer() const {
  const std::string& s = numeric_text("expected an integer");
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0') fail("expected an integer, got '" + s + "'", "a whole number such as 4");
  if (errno != 0 || value > 2147483647LL || value < -2147483647LL) {
    fail("expected an integer of magnitude below 2^31, got '" + s + "'");
  }
  return static_cast<int>(value);
}

int64_t YamlField::count(int64_t limit, const std::string& what) const {
  const std::string& s = numeric_text("expected a positive integer");
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0') fail("expected a positive integer, got '" + s + "'", "a whole number such as 4");
  if (value <= 0) fail("expected a positive integer, got '" + s + "'", "at least 1");
  if (errno == ERANGE || value > limit) {
    fail("expected at most " + std::to_string(limit) + " " + what + ", got '" + s + "'",
         "whale's limit on " + what + " (docs/limits.md)");
  }
  return value;
}

int YamlField::positive_integer() const {
  const int value = integer();
  if (value <= 0) fail("expected a positive integer, got '" + node_.Scalar() + "'");
  return value;
}

int YamlField::non_negative_integer() const {
  const int value = integer();
  if (value < 0) fail("expected an integer >= 0, got '" + node_.Scalar() + "'");
  return value;
}

bool YamlField::boolean() const {
  if (node_.IsScalar()) {
    const std::string& s = node_.Scalar();
    if (s == "true") return true;
    if (s == "false") return false;
  }
  fail("expected true or false, got " + describe(node_));
}

std::string YamlField::text_or(const std::string& key, const std::string& fallback) const {
  return has(key) ? get(key).text() : fallback;
}

int YamlField::positive_integer_or(const std::string& key, int fallback) const {
  return has(key) ? get(key).positive_integer() : fallback;
}

double YamlField::positive_number_or(const std::string& key, double fallback) const {
  return has(key) ? get(key).positive_number() : fallback;
}

bool YamlField::boolean_or(const std::string& key, bool fallback) const {
  return has(key) ? get(key).boolean() : fallback;
}

bool is_json_file_name(const std::string& path) {
  return path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
}

namespace {

// The line (from 1) of a '---' document marker that follows content, thus starts a second
// document; 0 where there is none. Read from the text: yaml-cpp's LoadAll can loop without end,
// filling memory, on a malformed second document. A marker is '---' at the start of a line, alone
// or followed by a space; no scalar may hold one there.
int second_document_line(const std::string& text) {
  bool content = false;
  int line = 0;
  for (std::size_t start = 0; start < text.size();) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    const std::string_view l(text.data() + start, end - start);
    ++line;
    const bool marker = l.substr(0, 3) == "---" && (l.size() == 3 || l[3] == ' ' || l[3] == '\t' || l[3] == '\r');
    if (marker && content) return line;
    const std::size_t first = l.find_first_not_of(" \t\r");
    if (!marker && first != std::string_view::npos && l[first] != '#' && l[first] != '%') content = true;
    start = end + 1;
  }
  return 0;
}

}  // namespace

YamlField parse_yaml_text(const std::string& text, const std::string& file, bool json) {
  try {
    YAML::Node root = YAML::Load(text);  // the first document
    if (const int line = second_document_line(text)) {
      throw Error(file, "", "one YAML document, got a second at line " + std::to_string(line),
                  "a '---' line separates documents: remove it, or split the file");
    }
    return YamlField(root, file, "");
  } catch (const YAML::DeepRecursion& e) {
    throw Error(file, "",
                "YAML nested at most " + std::to_string(kMaxYamlDepth) + " levels deep, got deeper at line " +
                    std::to_string(e.mark.line + 1),
                "whale's files are a few levels deep; check the brackets around that line");
  } catch (const YAML::Exception& e) {
    json = json || is_json_file_name(file);  // a Hugging Face config.json, say
    throw Error(file, "",
                std::string(json ? "malformed JSON" : "malformed YAML") + " at line " +
                    std::to_string(e.mark.line + 1) + ", column " + std::to_string(e.mark.column + 1) +
                    ": " + e.msg,
                json ? "check the braces, quotes and commas around that line"
                     : "check the indentation and the ':' and '-' around that line");
  }
}

YamlField load_yaml_file(const std::string& path) {
  return parse_yaml_text(read_text_file(path, "YAML"), path);
}

std::string parent_folder(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string resolve_path(const std::string& folder, const std::string& relative) {
  if (relative.empty() || relative[0] == '/' || folder.empty() || folder == ".") return relative;
  return folder + "/" + relative;
}

std::string file_stem(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  const std::size_t dot = name.find_last_of('.');
  return dot == std::string::npos ? name : name.substr(0, dot);
}

}  // namespace whale::plan

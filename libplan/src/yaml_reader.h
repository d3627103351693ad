// File: yaml_reader.h
// A strict, path-tracking view of a parsed YAML document: every spec loader reads through it, so
// unknown keys, missing fields, wrong types and non-positive sizes all fail the same way, with
// a whale::Error naming the file and the YAML path (`stages[2].devices`). Private to libplan.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace whale::plan {

class YamlField {
 public:
  YamlField(YAML::Node node, std::string file, std::string path)
      : node_(std::move(node)), file_(std::move(file)), path_(std::move(path)) {}

  const std::string& file() const { return file_; }
  /// The YAML path of this field, "" for the document root.
  const std::string& path() const { return path_; }
  /// The path of a child key, e.g. path() + ".name".
  std::string key_path(const std::string& key) const;

  /// Throws whale::Error(file, path, expected, hint) with the source line when known.
  [[noreturn]] void fail(const std::string& expected, const std::string& hint = "") const;

  bool is_map() const { return node_.IsMap(); }
  bool is_sequence() const { return node_.IsSequence(); }
  bool is_scalar() const { return node_.IsScalar(); }

  /// Checks that this is a mapping whose keys are all in `allowed` (the hint lists them), each
  /// given once.
  void expect_keys(const std::vector<std::string>& allowed) const;
  /// True when this mapping has `key`.
  bool has(const std::string& key) const;
  /// The value of a required key; a missing key fails with "missing field".
  YamlField get(const std::string& key) const;
  /// Keys of a mapping, in file order.
  std::vector<std::string> keys() const;

  /// Elements of a sequence (fails when this is not a sequence).
  std::vector<YamlField> elements() const;

  // Scalars. Each checks the type and fails with what was expected.
  std::string text() const;
  double number() const;
  double positive_number() const;          // > 0
  double non_negative_number() const;      // >= 0
  /// A number in [least, most]; outside it, fail naming the range and `hint`.
  double number_in(double least, double most, const std::string& hint) const;
  int integer() const;
  int positive_integer() const;            // > 0
  int non_negative_integer() const;        // >= 0
  /// A count in [1, limit]; the message names the limit and `what` it bounds (docs/limits.md).
  int64_t count(int64_t limit, const std::string& what) const;
  bool boolean() const;

  // Optional keys with defaults.
  std::string text_or(const std::string& key, const std::string& fallback) const;
  int positive_integer_or(const std::string& key, int fallback) const;
  double positive_number_or(const std::string& key, double fallback) const;
  bool boolean_or(const std::string& key, bool fallback) const;

  const YAML::Node& node() const { return node_; }

 private:
  // The scalar text of a numeric field; fails with `expected` ("expected a number") where it is
  // not a scalar. A quoted number ("4096") reads as the number, in YAML and in JSON (a
  // config.json refuses it: hf_config_number_field).
  const std::string& numeric_text(const std::string& expected) const;

  YAML::Node node_;
  std::string file_;
  std::string path_;
};

/// Reads and parses a YAML file. A missing, unreadable, empty or binary file, or a folder, fails
/// naming it; a parse error fails with the line and column; nesting deeper than yaml-cpp allows
/// fails as such.
YamlField load_yaml_file(const std::string& path);
/// Parses YAML text; `file` is only used in messages, which call the text JSON when `json` is
/// set or the file name ends in ".json".
YamlField parse_yaml_text(const std::string& text, const std::string& file, bool json = false);

/// Whether a path names a JSON file (ends in ".json"); JSON is read as YAML flow syntax.
bool is_json_file_name(const std::string& path);

/// The folder of a file path ("." when it has none), used to resolve relative references.
std::string parent_folder(const std::string& path);
/// `relative` resolved against `folder`, unless it is absolute.
std::string resolve_path(const std::string& folder, const std::string& relative);
/// The file name without folder and extension ("profiles/t4.yaml" -> "t4").
std::string file_stem(const std::string& path);

}  // namespace whale::plan

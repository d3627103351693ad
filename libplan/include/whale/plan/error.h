// File: error.h
// whale::Error: the one exception type for bad user input. Every main catches it, prints
// what() as one line and exits with code 2.
#pragma once

#include <stdexcept>
#include <string>

namespace whale {

/// Bad user input: a file that is missing or malformed, a field with a wrong value, a plan
/// that cannot run. what() is one line:
///   "FILE: YAML_PATH: EXPECTED (hint: HINT)"
/// where empty parts (and their separators) are left out. `yaml_path` uses the form
/// `stages[2].devices`.
class Error : public std::runtime_error {
 public:
  Error(std::string file, std::string yaml_path, std::string expected, std::string hint = "");

  const std::string& file() const noexcept { return file_; }
  const std::string& yaml_path() const noexcept { return yaml_path_; }
  const std::string& expected() const noexcept { return expected_; }
  const std::string& hint() const noexcept { return hint_; }

 private:
  std::string file_;
  std::string yaml_path_;
  std::string expected_;
  std::string hint_;
};

}  // namespace whale

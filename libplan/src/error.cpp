// File: error.cpp
// whale::Error: one-line messages for bad user input.
#include "whale/plan/error.h"

#include <utility>

namespace whale {
namespace {

std::string compose(const std::string& file, const std::string& yaml_path,
                    const std::string& expected, const std::string& hint) {
  std::string text;
  if (!file.empty()) text += file + ": ";
  if (!yaml_path.empty()) text += yaml_path + ": ";
  text += expected;
  if (!hint.empty()) text += " (hint: " + hint + ")";
  return text;
}

}  // namespace

Error::Error(std::string file, std::string yaml_path, std::string expected, std::string hint)
    : std::runtime_error(compose(file, yaml_path, expected, hint)),
      file_(std::move(file)),
      yaml_path_(std::move(yaml_path)),
      expected_(std::move(expected)),
      hint_(std::move(hint)) {}

}  // namespace whale

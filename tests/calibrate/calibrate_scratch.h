// File: calibrate_scratch.h
// Input files that the calibration tests write: under the build folder, never the source tree.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

namespace whale::test {

/// Writes `text` to <build>/calibrate-scratch/<folder>/<name> and returns the path.
inline std::string calibrate_scratch(const std::string& folder, const std::string& name, const std::string& text) {
  const std::string dir = std::string(WHALE_BINARY_DIR) + "/calibrate-scratch/" + folder;
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/" + name;
  std::ofstream(path) << text;
  return path;
}

}  // namespace whale::test

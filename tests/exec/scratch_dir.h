// File: scratch_dir.h
// The folders that the runtime's file tests write into: under the build folder, never the
// source tree or the machine's temporary folder.
#pragma once

#include <filesystem>
#include <string>

namespace whale::test {

/// <build>/tests/scratch/<name>, emptied and created; returns its path.
inline std::string fresh_scratch_dir(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::path(WHALE_BINARY_DIR) / "tests" / "scratch" / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace whale::test

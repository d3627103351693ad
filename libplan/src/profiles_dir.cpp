// File: profiles_dir.cpp
// Where the tools find the shipped device profiles when no --profiles is given: the
// environment, then the install prefix relative to the executable, then the source tree.
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "whale/plan/device_profile.h"

#ifndef WHALE_DEFAULT_PROFILES_DIR
#define WHALE_DEFAULT_PROFILES_DIR "profiles"
#endif

namespace whale::plan {

std::string default_profiles_dir() {
  const char* env = std::getenv("WHALE_PROFILES");
  if (env != nullptr && env[0] != '\0') return env;
  std::error_code error;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) {
    const std::filesystem::path installed = exe.parent_path() / ".." / "share" / "whale" / "profiles";
    if (std::filesystem::is_directory(installed, error)) return installed.lexically_normal().string();
  }
  return WHALE_DEFAULT_PROFILES_DIR;
}

}  // namespace whale::plan

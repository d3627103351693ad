// File: test_profile_cpu_cache.cpp
// The last-level cache read from a sysfs-shaped folder, CPU lists, and the share of one device.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "whale/exec/profile/profile_cpu_cache.h"

using namespace whale::exec;

namespace {

void write_index(const std::filesystem::path& dir, const std::string& index, const std::string& level,
                 const std::string& type, const std::string& size, const std::string& shared) {
  const std::filesystem::path folder = dir / index;
  std::filesystem::create_directories(folder);
  std::ofstream(folder / "level") << level << "\n";
  std::ofstream(folder / "type") << type << "\n";
  std::ofstream(folder / "size") << size << "\n";
  std::ofstream(folder / "shared_cpu_list") << shared << "\n";
}

}  // namespace

TEST_CASE("a sysfs CPU list counts its CPUs") {
  CHECK(cpu_list_count("0") == 1);
  CHECK(cpu_list_count("0-1") == 2);
  CHECK(cpu_list_count("0-3,8,10-11") == 7);
  CHECK(cpu_list_count("") == 0);
  CHECK(cpu_list_count("3-1") == 0);
  CHECK(cpu_list_count("a") == 0);
}

TEST_CASE("the last-level cache is the highest data or unified level of the folder") {
  const std::filesystem::path dir = std::filesystem::path(WHALE_BINARY_DIR) / "profile-scratch" / "cache";
  std::filesystem::remove_all(dir);
  write_index(dir, "index0", "1", "Data", "32K", "0");
  write_index(dir, "index1", "1", "Instruction", "32K", "0");
  write_index(dir, "index2", "2", "Unified", "512K", "0");
  write_index(dir, "index3", "3", "Unified", "32768K", "0-1");
  const LastLevelCache cache = read_last_level_cache(dir.string());
  CHECK(cache.level == 3);
  CHECK(cache.size_bytes == 32.0 * 1024 * 1024);
  CHECK(cache.shared_cpus == 2);
  CHECK(cache_bytes_per_device(cache, 1) == 16.0 * 1024 * 1024);  // one core of the two
  CHECK(cache_bytes_per_device(cache, 4) == 32.0 * 1024 * 1024);  // at most the whole cache
  CHECK(read_last_level_cache((dir / "missing").string()).size_bytes == 0);
}

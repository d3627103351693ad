// File: checkpoint_io.cpp
// Whole-file reads; atomic writes through whale::write_file_atomically.
#include "runtime/checkpoint_io.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "whale/plan/atomic_file.h"
#include "whale/plan/error.h"

namespace whale::exec {
namespace {

}  // namespace

std::string read_file_bytes(const std::string& path) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0)
    throw Error(path, "", std::string("a readable file: ") + std::strerror(errno), "check the path");
  if (S_ISDIR(info.st_mode)) throw Error(path, "", "a file, got a folder", "give a file in it");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path, "", "a readable file", "check its permissions");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) throw Error(path, "", "a readable file", "reading it failed");
  return bytes.str();
}

void write_file_atomically(const std::string& path, const std::string& bytes) {
  whale::write_file_atomically(path, bytes);
}

}  // namespace whale::exec

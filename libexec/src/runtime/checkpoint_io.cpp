// File: checkpoint_io.cpp
// Whole-file reads and atomic writes with POSIX calls (fsync before the rename).
#include "runtime/checkpoint_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "whale/plan/error.h"

namespace whale::exec {
namespace {

std::string folder_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw Error(path, "", what + ": " + std::strerror(errno),
              "nothing was replaced; check the free space, the permissions and the file-size "
              "limit of that folder");
}

}  // namespace

std::string read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path, "", "a readable file", "check the path");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

void write_file_atomically(const std::string& path, const std::string& bytes) {
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) fail(temporary, "cannot create the file");
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int error = errno;  // close and unlink below may change errno
      ::close(fd);
      ::unlink(temporary.c_str());
      errno = error;
      fail(temporary, "cannot write the file");
    }
    written += static_cast<std::size_t>(n);
  }
  int flush_error = ::fsync(fd) == 0 ? 0 : errno;
  if (::close(fd) != 0 && flush_error == 0) flush_error = errno;  // closed either way
  if (flush_error != 0) {
    ::unlink(temporary.c_str());
    errno = flush_error;
    fail(temporary, "cannot flush the file");
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(temporary.c_str());
    errno = error;
    fail(path, "cannot rename the temporary file into place");
  }
  const int dir = ::open(folder_of(path).c_str(), O_RDONLY);
  if (dir >= 0) {
    ::fsync(dir);  // makes the rename durable; a folder that cannot be synced is not an error
    ::close(dir);
  }
}

}  // namespace whale::exec

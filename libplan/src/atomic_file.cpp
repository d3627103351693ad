// File: atomic_file.cpp
// AtomicFile: temporary file in the same folder, checked writes, rename on commit.
#include "whale/plan/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "whale/plan/error.h"

namespace whale {
namespace {

std::string folder_of(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string hint_for(int error_number, const std::string& folder) {
  switch (error_number) {
    case ENOSPC: return "the disk is full; nothing was replaced";
    case EFBIG: return "File too large: a file-size limit was reached; nothing was replaced";
    case ENOENT: {
      struct stat info;
      const bool is_folder = ::stat(folder.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
      return is_folder ? "files cannot be created in " + folder
                       : "the folder " + folder + " does not exist";
    }
    case EACCES:
    case EPERM:
    case EROFS: return "no permission to write in " + folder;
    case EISDIR: return "it is a folder; give a file name";
    default: return std::strerror(error_number);
  }
}

}  // namespace

AtomicFile::AtomicFile(std::string path, std::string field)
    : path_(std::move(path)), field_(std::move(field)) {
  if (path_.empty()) throw Error("", field_, "a file name", "give a path such as out/NAME");
  struct stat info;
  const bool exists = ::stat(path_.c_str(), &info) == 0;
  if (exists && S_ISDIR(info.st_mode)) fail("a file to write, not a folder", EISDIR);
  if (exists && !S_ISREG(info.st_mode)) {
    file_ = std::fopen(path_.c_str(), "wb");  // a device or a pipe: no rename possible
    if (!file_) fail("a file that can be written", errno);
    return;
  }
  const std::string folder = folder_of(path_);
  const std::size_t slash = path_.find_last_of('/');
  const std::string base = slash == std::string::npos ? path_ : path_.substr(slash + 1);
  std::string pattern = (folder == "/" ? "" : folder) + "/." + base + ".tmp.XXXXXX";
  const int fd = ::mkstemp(pattern.data());
  if (fd < 0) fail("a file that can be written", errno);
  ::fchmod(fd, 0644);
  temp_path_ = pattern;
  file_ = ::fdopen(fd, "wb");
  if (!file_) {
    const int error_number = errno;
    ::close(fd);
    fail("a file that can be written", error_number);
  }
}

AtomicFile::~AtomicFile() {
  if (file_) std::fclose(file_);
  if (!temp_path_.empty()) std::remove(temp_path_.c_str());
}

void AtomicFile::fail(const std::string& what, int error_number) {
  const std::string hint = hint_for(error_number, folder_of(path_));
  if (file_) std::fclose(file_);
  file_ = nullptr;
  if (!temp_path_.empty()) std::remove(temp_path_.c_str());
  temp_path_.clear();
  throw Error(path_, field_, what, hint);
}

void AtomicFile::write(const std::string& text) {
  if (!file_) fail("a file that is still open for writing", EBADF);
  if (!text.empty() && std::fwrite(text.data(), 1, text.size(), file_) != text.size())
    fail("a file that can be written completely", errno);
}

void AtomicFile::flush() {
  if (!file_) fail("a file that is still open for writing", EBADF);
  if (std::fflush(file_) != 0) fail("a file that can be written completely", errno);
}

void AtomicFile::commit() {
  flush();
  // fsync before the rename, so that a crash leaves the old file or the new one, whole.
  if (!temp_path_.empty() && ::fsync(::fileno(file_)) != 0)
    fail("a file that can be written completely", errno);
  std::FILE* file = file_;
  file_ = nullptr;
  if (std::fclose(file) != 0) fail("a file that can be written completely", errno);
  if (temp_path_.empty()) return;
  if (std::rename(temp_path_.c_str(), path_.c_str()) != 0) fail("a file that can be replaced", errno);
  temp_path_.clear();
  const int folder = ::open(folder_of(path_).c_str(), O_RDONLY);
  if (folder >= 0) {
    ::fsync(folder);  // makes the rename durable; a folder that cannot be synced is no error
    ::close(folder);
  }
}

void write_file_atomically(const std::string& path, const std::string& text,
                           const std::string& field) {
  AtomicFile file(path, field);
  file.write(text);
  file.commit();
}

}  // namespace whale

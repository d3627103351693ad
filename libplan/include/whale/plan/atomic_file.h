// File: atomic_file.h
// Outputs that appear whole or not at all: text goes to a temporary file in the target's
// folder, every write, flush, fsync and close is checked, and the file is renamed over the target.
#pragma once

#include <cstdio>
#include <string>

namespace whale {

/// One output file written atomically. write() appends; commit() flushes, closes and renames
/// the temporary file over `path`. Without commit() (an exception, an early return) the
/// temporary file is removed and `path` keeps its old content. A target that exists and is not
/// a regular file (a device such as /dev/null or /dev/full, a pipe) is written in place, with the
/// same checks. Every failure throws whale::Error naming `path` and `field` (e.g. "--out").
class AtomicFile {
 public:
  AtomicFile(std::string path, std::string field);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const std::string& text);
  /// Flushes what was written so far to the (temporary) file; checks it.
  void flush();
  void commit();
  const std::string& path() const { return path_; }

 private:
  [[noreturn]] void fail(const std::string& what, int error_number);

  std::string path_;
  std::string field_;
  std::string temp_path_;  // empty when writing in place
  std::FILE* file_ = nullptr;
};

/// Writes `text` to `path` atomically (see AtomicFile); `field` names the option or setting
/// that gave the path, for the error message.
void write_file_atomically(const std::string& path, const std::string& text,
                           const std::string& field = "");

}  // namespace whale

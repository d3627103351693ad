// File: checkpoint_io.h
// Private file helpers of checkpoints and token files: whole-file reads and atomic writes
// (temporary file in the same folder, fsync, rename, fsync of the folder).
#pragma once

#include <string>

namespace whale::exec {

/// The whole file. Throws whale::Error(path, "", "a readable file") when it cannot be read.
std::string read_file_bytes(const std::string& path);
/// Replaces `path` with `bytes` atomically (whale::write_file_atomically): readers see the old
/// file or the new one, never a part. Throws whale::Error naming the path when any step fails.
void write_file_atomically(const std::string& path, const std::string& bytes);

}  // namespace whale::exec

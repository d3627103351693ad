// File: text_file.h
// Reads a whole input text file (a YAML spec, a CSV of runs) with one clear error per way it
// can be unusable: missing, a folder, unreadable, empty or binary.
#pragma once

#include <string>

namespace whale::plan {

/// The content of `path`, a file in `format` (a word such as "YAML" or "CSV" that the messages
/// name: "a CSV file, got a folder"). Throws whale::Error naming the path when the path is
/// empty or missing, names a folder, cannot be read, holds only white space or holds a NUL byte.
std::string read_text_file(const std::string& path, const std::string& format);

}  // namespace whale::plan

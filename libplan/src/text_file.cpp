// File: text_file.cpp
// read_text_file: a whole input file, checked (text_file.h).
#include "whale/plan/text_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "whale/plan/error.h"

namespace whale::plan {

std::string read_text_file(const std::string& path, const std::string& format) {
  if (path.empty()) throw Error("", "", "a " + format + " file name, got an empty path");
  struct stat info;
  if (::stat(path.c_str(), &info) != 0) {
    throw Error(path, "", "a " + format + " file: " + std::strerror(errno),
                "check that the path exists");
  }
  if (S_ISDIR(info.st_mode)) throw Error(path, "", "a " + format + " file, got a folder", "give a file in it");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path, "", "a readable " + format + " file", "check its permissions");
  std::ostringstream text;
  text << in.rdbuf();
  const std::string content = text.str();
  if (in.bad()) throw Error(path, "", "a readable " + format + " file", "reading it failed");
  if (content.find_first_not_of(" \t\r\n") == std::string::npos) {
    throw Error(path, "", "a " + format + " file with content, got an empty file",
                "was it written completely? the files under configs/ show the form");
  }
  if (content.find('\0') != std::string::npos) {
    throw Error(path, "", "a " + format + " text file, got binary data", "is this the right file?");
  }
  return content;
}

}  // namespace whale::plan

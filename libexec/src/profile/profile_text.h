// File: profile_text.h
// printf-style formatting of measured figures for whale-profile's progress lines and YAML notes.
#pragma once

#include <cstdio>
#include <string>

namespace whale::exec {

/// `pattern` formatted with up to four doubles (unused ones are ignored); at most 255 chars.
inline std::string format(const char* pattern, double a, double b = 0, double c = 0, double d = 0) {
  char text[256];
  std::snprintf(text, sizeof text, pattern, a, b, c, d);
  return text;
}

}  // namespace whale::exec

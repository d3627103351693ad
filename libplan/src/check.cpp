// File: check.cpp
// check_failed: the one place that turns a failed WHALE_CHECK into an InternalError.
#include "whale/plan/check.h"

#include <cstring>

namespace whale {

void check_failed(const char* file, int line, const char* condition, const std::string& message) {
  const char* slash = std::strrchr(file, '/');
  const char* base = slash ? slash + 1 : file;
  throw InternalError(std::string(base) + ":" + std::to_string(line) + ": " + condition + ": " +
                      message);
}

}  // namespace whale

// File: version.cpp
// The version text of the tools, from the header that cmake/version.cmake generates at build time.
#include "whale/plan/version.h"

#include "whale_version_info.h"

namespace whale::plan {

std::string version_text(const std::string& tool) {
  return tool + " " + WHALE_VERSION + " (git " + WHALE_GIT_COMMIT + ")";
}

}  // namespace whale::plan

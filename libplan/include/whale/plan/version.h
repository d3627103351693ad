// File: version.h
// whale's version and the git commit it was built from, for every tool's --version.
#pragma once

#include <string>

namespace whale::plan {

/// "<tool> <version> (git <commit>)": the project version from CMake and the short commit of
/// the source tree when the build ran ("unknown" outside a git checkout).
std::string version_text(const std::string& tool);

}  // namespace whale::plan

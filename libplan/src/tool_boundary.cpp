// File: tool_boundary.cpp
// run_guarded: maps the exceptions that reach a tool's main to one line and an exit code.
#include "whale/plan/tool_boundary.h"

#include <unistd.h>

#include <cerrno>
#include <exception>
#include <iostream>
#include <new>

#include "whale/plan/error.h"

namespace whale {
namespace {

/// Makes `text` one line: newlines become "; " so that a message never spans lines.
std::string one_line(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\n' || c == '\r') {
      if (!out.empty() && out.back() != ' ') out += "; ";
    } else {
      out += c;
    }
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == ';')) out.pop_back();
  return out;
}

/// Writes `line` to standard error in as few write calls as the kernel allows (one for any
/// error line): std::cerr is unbuffered and writes each piece on its own, so ranks failing at
/// once under mpirun had their lines interleaved mid-line.
void write_whole_line(const std::string& line) {
  std::cerr.flush();
  const char* data = line.data();
  std::size_t left = line.size();
  while (left > 0) {
    const ssize_t wrote = ::write(STDERR_FILENO, data, left);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) return;
    data += wrote;
    left -= static_cast<std::size_t>(wrote);
  }
}

int report(const std::string& tool, const std::string& kind, const std::string& who,
           const std::string& what, const std::string& tail, int code) {
  std::cout.flush();
  write_whole_line(tool + ": " + kind + ": " + (who.empty() ? "" : who + ": ") + one_line(what) +
                   tail + "\n");
  return code;
}

}  // namespace

int run_guarded(const std::string& tool, const std::function<int()>& body,
                const std::string& who) {
  try {
    return body();
  } catch (const Error& e) {
    return report(tool, "error", who, e.what(), "", kExitBadInput);
  } catch (const std::bad_alloc&) {
    return report(tool, "error", who, "out of memory",
                  " (hint: the inputs ask for more memory than this machine has; use smaller ones)",
                  kExitBadInput);
  } catch (const std::exception& e) {
    return report(tool, "internal error", who, e.what(), " (please report this)", kExitInternal);
  } catch (...) {
    return report(tool, "internal error", who, "an unknown exception", " (please report this)",
                  kExitInternal);
  }
}

}  // namespace whale

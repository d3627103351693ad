// File: tool_boundary.cpp
// run_guarded: maps the exceptions that reach a tool's main to one line and an exit code.
#include "whale/plan/tool_boundary.h"

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

int report(const std::string& tool, const std::string& kind, const std::string& who,
           const std::string& what, const std::string& tail, int code) {
  std::cout.flush();
  std::cerr << tool << ": " << kind << ": " << (who.empty() ? "" : who + ": ") << one_line(what)
            << tail << std::endl;
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

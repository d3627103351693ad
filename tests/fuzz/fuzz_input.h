// File: fuzz_input.h
// The shared body of whale's libFuzzer harnesses: the input becomes a file, a loader reads it,
// and whale::Error is the expected outcome of bad input. Anything else (a crash, another
// exception, a sanitizer report, a hang) escapes and is a finding.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "whale/plan/error.h"

namespace whale::fuzz {

/// Writes the input to "fuzz-input.<pid><suffix>" in the current folder (scripts/fuzz.sh runs
/// the harnesses inside the build folder), calls `load(path)`, and removes the file again.
template <typename Load>
int load_input(const uint8_t* data, std::size_t size, const char* suffix, Load load) {
  static const std::string path = "fuzz-input." + std::to_string(::getpid()) + suffix;
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) __builtin_trap();  // the harness cannot work without its input file
  if (size > 0 && std::fwrite(data, 1, size, file) != size) __builtin_trap();
  std::fclose(file);
  try {
    load(path);
  } catch (const whale::Error&) {
    // Bad input, reported as whale's tools report it: the expected outcome.
  }
  std::remove(path.c_str());
  return 0;
}

}  // namespace whale::fuzz

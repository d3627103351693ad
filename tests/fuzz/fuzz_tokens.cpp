// File: fuzz_tokens.cpp
// libFuzzer harness of the token file reader (whale::exec::load_tokens: binary token files and text): any input either loads or raises whale::Error.
#include "fuzz_input.h"
#include "whale/exec/runtime/data_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return whale::fuzz::load_input(data, size, ".bin", [](const std::string& path) {
    whale::exec::load_tokens(path);
  });
}

// File: fuzz_model.cpp
// libFuzzer harness of the model loader (whale::plan::load_model): any input either loads or raises whale::Error.
#include "fuzz_input.h"
#include "whale/plan/model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return whale::fuzz::load_input(data, size, ".yaml", [](const std::string& path) {
    whale::plan::load_model(path);
  });
}

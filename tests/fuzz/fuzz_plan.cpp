// File: fuzz_plan.cpp
// libFuzzer harness of the plan loader (whale::plan::load_plan, with its validation): any input either loads or raises whale::Error.
#include "fuzz_input.h"
#include "whale/plan/plan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return whale::fuzz::load_input(data, size, ".yaml", [](const std::string& path) {
    whale::plan::load_plan(path);
  });
}

// File: fuzz_profile.cpp
// libFuzzer harness of the device profile loader (whale::plan::load_device_profile): any input either loads or raises whale::Error.
#include "fuzz_input.h"
#include "whale/plan/device_profile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return whale::fuzz::load_input(data, size, ".yaml", [](const std::string& path) {
    whale::plan::load_device_profile(path);
  });
}

// File: fuzz_trace.cpp
// libFuzzer harness of the Chrome trace reader (whale::plan::read_chrome_trace_file, what
// whale-sim --compare reads) for an 8-device cluster: any input either reads or raises
// whale::Error.
#include "fuzz_input.h"
#include "whale/plan/timeline.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return whale::fuzz::load_input(data, size, ".json", [](const std::string& path) {
    whale::plan::read_chrome_trace_file(path, 8);
  });
}

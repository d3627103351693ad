// File: fuzz_cluster.cpp
// libFuzzer harness of the cluster loader (whale::plan::load_cluster): any input either loads or raises whale::Error.
#include "fuzz_input.h"
#include "whale/plan/cluster.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return whale::fuzz::load_input(data, size, ".yaml", [](const std::string& path) {
    whale::plan::load_cluster(path);
  });
}

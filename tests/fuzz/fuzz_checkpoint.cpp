// File: fuzz_checkpoint.cpp
// libFuzzer harness of the checkpoint reader (whale::exec::read_checkpoint): any input either
// reads or raises whale::Error. The expected fingerprint and rank are taken from the input's
// own header, so that inputs with a good checksum get past those checks too.
#include <cstring>

#include "fuzz_input.h"
#include "whale/exec/runtime/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uint64_t fingerprint = 0;
  uint32_t rank = 0;
  if (size >= 32) {
    std::memcpy(&rank, data + 12, sizeof(rank));
    std::memcpy(&fingerprint, data + 24, sizeof(fingerprint));
  }
  return whale::fuzz::load_input(data, size, ".ckpt", [&](const std::string& path) {
    whale::exec::read_checkpoint(path, fingerprint, static_cast<int>(rank));
  });
}

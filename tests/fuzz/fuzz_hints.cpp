// File: fuzz_hints.cpp
// libFuzzer harness of the hints loader (whale::plan::load_hints) and of check_hints against
// the 8-device CPU cluster and the tiny model: any input either passes or raises whale::Error.
#include "fuzz_input.h"
#include "whale/plan/cluster.h"
#include "whale/plan/hints.h"
#include "whale/plan/model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const whale::plan::Cluster cluster =
      whale::plan::load_cluster(WHALE_SOURCE_DIR "/configs/clusters/cpu-local-8.yaml");
  static const whale::plan::Model model =
      whale::plan::load_model(WHALE_SOURCE_DIR "/configs/models/tiny.yaml");
  return whale::fuzz::load_input(data, size, ".yaml", [](const std::string& path) {
    whale::plan::check_hints(whale::plan::load_hints(path), cluster, model);
  });
}

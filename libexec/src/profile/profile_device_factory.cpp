// File: profile_device_factory.cpp
// parse_device_spec and make_device_prober: the one place that chooses between the CPU and the
// CUDA prober.
#include <cstdlib>
#include <string>

#include "whale/exec/profile/profile_cpu_prober.h"
#include "whale/exec/profile/profile_device_prober.h"
#include "whale/plan/error.h"
#if defined(WHALE_HAVE_CUDA)
#include "profile/cuda/profile_cuda_factory.h"
#endif

namespace whale::exec {

DeviceSpec parse_device_spec(const std::string& text) {
  DeviceSpec spec;
  if (text == "cpu") return spec;
  const std::string prefix = "cuda";
  if (text.compare(0, prefix.size(), prefix) == 0) {
    spec.kind = DeviceSpec::Kind::cuda;
    if (text.size() == prefix.size()) return spec;
    const std::string ordinal = text.substr(prefix.size() + 1);
    char* end = nullptr;
    const long index = std::strtol(ordinal.c_str(), &end, 10);
    if (text[prefix.size()] == ':' && !ordinal.empty() && *end == '\0' && index >= 0 &&
        index < 1024) {
      spec.index = static_cast<int>(index);
      return spec;
    }
  }
  throw Error("", "--device", "cpu or cuda:N, got \"" + text + "\"",
              "the devices whale-profile can measure are cpu and cuda:0, cuda:1, ...");
}

std::unique_ptr<DeviceProber> make_device_prober(const DeviceSpec& spec) {
  if (spec.kind == DeviceSpec::Kind::cpu) return make_cpu_prober();
#if defined(WHALE_HAVE_CUDA)
  return make_cuda_prober(spec.index);
#else
  throw Error("", "--device", "no CUDA device: this whale was built without CUDA",
              "install the CUDA toolkit (nvcc, cuBLAS, NCCL, CUPTI) and rebuild, or use "
              "--device cpu");
#endif
}

}  // namespace whale::exec

// File: transport_choice.cpp
// choose_transport: NCCL, MPI or the host-memory bridge from the members' device kinds.
#include "whale/exec/comm/transport_choice.h"

#include <stdexcept>

namespace whale::exec {

const char* to_string(TransportKind kind) {
  switch (kind) {
    case TransportKind::nccl: return "nccl";
    case TransportKind::mpi: return "mpi";
    case TransportKind::host_bridge: return "host-bridge";
  }
  return "?";
}

DeviceKind device_kind_from_profile(const std::string& profile_kind) {
  if (profile_kind == "gpu") return DeviceKind::gpu;
  if (profile_kind == "cpu") return DeviceKind::cpu;
  throw std::invalid_argument("device kind \"" + profile_kind + "\" is neither gpu nor cpu");
}

TransportKind choose_transport(const std::vector<DeviceKind>& member_kinds) {
  if (member_kinds.empty()) throw std::invalid_argument("choose_transport: no members");
  bool gpu = false, cpu = false;
  for (DeviceKind kind : member_kinds) (kind == DeviceKind::gpu ? gpu : cpu) = true;
  if (gpu && cpu) return TransportKind::host_bridge;
  return gpu ? TransportKind::nccl : TransportKind::mpi;
}

}  // namespace whale::exec

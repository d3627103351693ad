// File: transport_choice.h
// The transport of a communicator from the device kinds of its members: NCCL between GPUs,
// MPI between CPUs, and the host-memory bridge (download, MPI, upload) where kinds mix
// (HetHub's unified communicator across device kinds).
#pragma once

#include <string>
#include <vector>

namespace whale::exec {

enum class DeviceKind { cpu, gpu };
enum class TransportKind { nccl, mpi, host_bridge };

/// "nccl", "mpi", "host-bridge".
const char* to_string(TransportKind kind);

/// A profile's kind ("gpu" or "cpu", plan::DeviceProfile::kind) as a DeviceKind; throws
/// std::invalid_argument on anything else (profiles are validated on load).
DeviceKind device_kind_from_profile(const std::string& profile_kind);

/// nccl when every member is a GPU, mpi when every member is a CPU, host_bridge when both
/// kinds appear. Throws std::invalid_argument for an empty member list.
TransportKind choose_transport(const std::vector<DeviceKind>& member_kinds);

}  // namespace whale::exec

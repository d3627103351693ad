// File: host_bridge_communicator.h
// The host-memory bridge: a Communicator whose data live in a rank's device memory (a GPU's,
// or the host's on a CPU rank) and travel over an MPI communicator through host buffers:
// download to a host buffer, MPI, upload. It joins GPU and CPU ranks in one group.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "whale/exec/comm/communicator.h"

namespace whale::exec {

/// Copies between one rank's device memory and host memory; blocking (the copy is complete
/// when the call returns). A GPU's staging copies asynchronously through pinned memory
/// (make_cuda_staging); a CPU rank's is a plain copy.
class DeviceStaging {
 public:
  virtual ~DeviceStaging() = default;
  virtual void download(float* host, const float* device, std::size_t count) = 0;
  virtual void upload(float* device, const float* host, std::size_t count) = 0;
};

/// Staging for a CPU rank: its "device" memory is host memory (a plain copy).
std::shared_ptr<DeviceStaging> make_host_staging();

/// Floats moved through the staging buffers since construction.
struct StagingCounts {
  std::size_t downloaded_floats = 0;
  std::size_t uploaded_floats = 0;
  /// Requests destroyed before their collective completed, and given up on after waiting
  /// abandon_after_s (a peer rank gone): their host buffers are kept, never freed.
  std::size_t abandoned_requests = 0;
};

/// How long a non-blocking bridge request destroyed before completion waits for its host
/// collective before giving up on it (a peer that died leaves it pending forever): long enough
/// for any step of a live job on a loaded machine.
constexpr double kBridgeAbandonAfterS = 300.0;

class HostBridgeCommunicator : public Communicator {
 public:
  /// `host` carries host buffers among the members (MPI); `staging` moves this rank's data.
  /// A request destroyed before completion waits at most `abandon_after_s` for it, then
  /// prints one line to stderr ("whale: error: ...") and abandons it: its host buffer and the
  /// host request are never freed, so that a late completion writes into live memory.
  HostBridgeCommunicator(std::unique_ptr<Communicator> host,
                         std::shared_ptr<DeviceStaging> staging,
                         double abandon_after_s = kBridgeAbandonAfterS);

  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  /// Every call: download the input, run the host communicator's call, upload the output.
  void all_reduce_sum(float* data, std::size_t count) override;
  /// Downloads now, starts the host all-reduce on a host buffer of its own, and uploads the
  /// result when the request completes (test() or wait()).
  std::unique_ptr<CommRequest> start_all_reduce_sum(float* data, std::size_t count) override;
  /// Downloads all blocks now, starts the host reduce-scatter on a host copy of its own, and
  /// uploads this rank's block when the request completes.
  std::unique_ptr<CommRequest> start_reduce_scatter_sum(
      float* data, const std::vector<std::size_t>& counts) override;
  void reduce_scatter_sum(const float* input, float* output,
                          std::size_t count_per_rank) override;
  void all_gather(const float* input, float* output, std::size_t count_per_rank) override;
  void send(const float* data, std::size_t count, int peer, int tag) override;
  void recv(float* data, std::size_t count, int peer, int tag) override;
  /// A bridge over the host communicator's subgroup, with the same staging.
  std::unique_ptr<Communicator> subgroup(const std::vector<int>& members) override;

  const StagingCounts& counts() const { return counts_; }

 private:
  float* staged_input(const float* device, std::size_t count);
  /// A fresh host copy of `count` device floats, for a collective that outlives the call.
  std::vector<float> host_copy(const float* device, std::size_t count);
  float* output_buffer(std::size_t count);
  void upload_output(float* device, const float* host, std::size_t count);

  std::unique_ptr<Communicator> host_;
  std::shared_ptr<DeviceStaging> staging_;
  std::vector<float> in_;   // host copy of the input (grown, never shrunk)
  std::vector<float> out_;  // host buffer of the output
  StagingCounts counts_;
  double abandon_after_s_;
};

}  // namespace whale::exec

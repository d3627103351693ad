// File: host_bridge_communicator.cpp
// HostBridgeCommunicator: download to host buffers, the host (MPI) communicator's call, upload;
// and the host staging of CPU ranks (memory copies).
#include "whale/exec/comm/host_bridge_communicator.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <thread>

namespace whale::exec {
namespace {

class HostStaging : public DeviceStaging {
 public:
  void download(float* host, const float* device, std::size_t count) override {
    std::copy(device, device + count, host);
  }
  void upload(float* device, const float* host, std::size_t count) override {
    std::copy(host, host + count, device);
  }
};

/// The host buffers and requests of abandoned bridge requests: kept reachable and never freed,
/// so that a collective completing late writes into live memory (and leak checkers see them
/// as held, not lost).
struct Abandoned {
  std::vector<float>* host;
  CommRequest* request;
};
std::vector<Abandoned>& abandoned_list() {
  static auto* list = new std::vector<Abandoned>();  // never destroyed, as its entries
  return *list;
}

/// A host collective in flight on its own host copy of the device data; on completion it
/// uploads the part of the result this rank gets ([offset, offset + count) of the copy) to
/// the same place on the device.
class BridgeRequest : public CommRequest {
 public:
  /// `start` starts the host collective on the host copy and returns its request.
  template <class Start>
  BridgeRequest(std::vector<float> host, float* device, std::size_t offset, std::size_t count,
                DeviceStaging& staging, StagingCounts& counts, double abandon_after_s,
                Start start)
      : host_(std::make_unique<std::vector<float>>(std::move(host))), device_(device),
        offset_(offset), count_(count), staging_(staging), counts_(counts),
        abandon_after_s_(abandon_after_s) {
    request_ = start(host_->data());
  }
  /// Destroyed before completion (an error unwinds the step): waits for the host collective at
  /// most abandon_after_s, so that a dead peer cannot hang the rank, and leaves the device data
  /// as they are.
  ~BridgeRequest() override {
    if (uploaded_) return;
    using Clock = std::chrono::steady_clock;
    const auto deadline = Clock::now() + std::chrono::duration<double>(abandon_after_s_);
    while (!request_->test()) {
      if (Clock::now() >= deadline) {
        abandon();
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  bool test() override {
    if (!uploaded_ && request_->test()) upload();
    return uploaded_;
  }
  void wait() override {
    if (uploaded_) return;
    request_->wait();
    upload();
  }

 private:
  /// Gives up on the pending host collective: it may still write into the host buffer, so the
  /// buffer and the request (whose destructor would wait) are kept forever (abandoned_list).
  void abandon() {
    std::fprintf(stderr,
                 "whale: error: a host-bridge collective of %zu floats did not complete within "
                 "%.0f s (has a peer rank ended?); abandoning it\n",
                 host_->size(), abandon_after_s_);
    abandoned_list().push_back(Abandoned{host_.release(), request_.release()});
    ++counts_.abandoned_requests;
  }
  void upload() {
    staging_.upload(device_ + offset_, host_->data() + offset_, count_);
    counts_.uploaded_floats += count_;
    uploaded_ = true;
  }

  std::unique_ptr<std::vector<float>> host_;  // on the heap: abandon() keeps it
  float* device_;
  std::size_t offset_, count_;
  DeviceStaging& staging_;
  StagingCounts& counts_;
  double abandon_after_s_;
  std::unique_ptr<CommRequest> request_;
  bool uploaded_ = false;
};

float* grown(std::vector<float>& buffer, std::size_t count) {
  if (buffer.size() < count) buffer.resize(count);
  return buffer.data();
}

}  // namespace

std::shared_ptr<DeviceStaging> make_host_staging() { return std::make_shared<HostStaging>(); }

HostBridgeCommunicator::HostBridgeCommunicator(std::unique_ptr<Communicator> host,
                                               std::shared_ptr<DeviceStaging> staging,
                                               double abandon_after_s)
    : host_(std::move(host)), staging_(std::move(staging)), abandon_after_s_(abandon_after_s) {}

float* HostBridgeCommunicator::staged_input(const float* device, std::size_t count) {
  float* host = grown(in_, count);
  staging_->download(host, device, count);
  counts_.downloaded_floats += count;
  return host;
}

float* HostBridgeCommunicator::output_buffer(std::size_t count) { return grown(out_, count); }

void HostBridgeCommunicator::upload_output(float* device, const float* host,
                                           std::size_t count) {
  staging_->upload(device, host, count);
  counts_.uploaded_floats += count;
}

void HostBridgeCommunicator::all_reduce_sum(float* data, std::size_t count) {
  float* host = staged_input(data, count);
  host_->all_reduce_sum(host, count);
  upload_output(data, host, count);
}

std::vector<float> HostBridgeCommunicator::host_copy(const float* device, std::size_t count) {
  std::vector<float> host(count);
  staging_->download(host.data(), device, count);
  counts_.downloaded_floats += count;
  return host;
}

std::unique_ptr<CommRequest> HostBridgeCommunicator::start_all_reduce_sum(float* data,
                                                                          std::size_t count) {
  return std::make_unique<BridgeRequest>(
      host_copy(data, count), data, 0, count, *staging_, counts_, abandon_after_s_,
      [&](float* host) { return host_->start_all_reduce_sum(host, count); });
}

std::unique_ptr<CommRequest> HostBridgeCommunicator::start_reduce_scatter_sum(
    float* data, const std::vector<std::size_t>& counts) {
  const std::size_t offset = block_offset(counts, rank(), size());
  const std::size_t total = std::accumulate(counts.begin(), counts.end(), std::size_t{0});
  return std::make_unique<BridgeRequest>(
      host_copy(data, total), data, offset, counts[rank()], *staging_, counts_,
      abandon_after_s_, [&](float* host) { return host_->start_reduce_scatter_sum(host, counts); });
}

void HostBridgeCommunicator::reduce_scatter_sum(const float* input, float* output,
                                                std::size_t count_per_rank) {
  const float* host = staged_input(input, count_per_rank * size());
  float* reduced = output_buffer(count_per_rank);
  host_->reduce_scatter_sum(host, reduced, count_per_rank);
  upload_output(output, reduced, count_per_rank);
}

void HostBridgeCommunicator::all_gather(const float* input, float* output,
                                        std::size_t count_per_rank) {
  const float* host = staged_input(input, count_per_rank);
  float* gathered = output_buffer(count_per_rank * size());
  host_->all_gather(host, gathered, count_per_rank);
  upload_output(output, gathered, count_per_rank * size());
}

void HostBridgeCommunicator::send(const float* data, std::size_t count, int peer, int tag) {
  host_->send(staged_input(data, count), count, peer, tag);
}

void HostBridgeCommunicator::recv(float* data, std::size_t count, int peer, int tag) {
  float* received = output_buffer(count);
  host_->recv(received, count, peer, tag);
  upload_output(data, received, count);
}

std::unique_ptr<Communicator> HostBridgeCommunicator::subgroup(const std::vector<int>& members) {
  return std::make_unique<HostBridgeCommunicator>(host_->subgroup(members), staging_,
                                                  abandon_after_s_);
}

}  // namespace whale::exec

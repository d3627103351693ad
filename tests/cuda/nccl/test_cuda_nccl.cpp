// File: test_cuda_nccl.cpp
// The one-rank NCCL smoke test (scripts/gpu-check.sh runs it): NCCL bootstraps through MPI on
// GPU 0, and each collective of NcclCommunicator on device buffers leaves exactly what a sum
// over one rank is, the input. Without a CUDA device it prints "skipped: no CUDA device" and
// exits 77, which ctest counts as skipped.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cuda_runtime.h>
#include <mpi.h>

#include <vector>

#include "backend/cuda/cuda_check.h"
#include "cuda_test_device.h"
#include "whale/exec/comm/mpi_communicator.h"
#include "whale/exec/comm/nccl_communicator.h"

namespace {

/// `count` floats of GPU 0's memory, freed on scope exit.
struct DeviceFloats {
  float* data = nullptr;
  explicit DeviceFloats(std::size_t count) {
    WHALE_CUDA_CHECK(cudaMalloc(&data, count * sizeof(float)));
  }
  ~DeviceFloats() { cudaFree(data); }
  DeviceFloats(const DeviceFloats&) = delete;
  DeviceFloats& operator=(const DeviceFloats&) = delete;
  void set(const std::vector<float>& values) {
    WHALE_CUDA_CHECK(cudaMemcpy(data, values.data(), values.size() * sizeof(float),
                                cudaMemcpyHostToDevice));
  }
  std::vector<float> get(std::size_t count) const {
    std::vector<float> values(count);
    WHALE_CUDA_CHECK(cudaMemcpy(values.data(), data, count * sizeof(float),
                                cudaMemcpyDeviceToHost));
    return values;
  }
};

/// An NCCL communicator over this one process, on GPU 0.
std::unique_ptr<whale::exec::Communicator> one_rank_nccl() {
  MPI_Comm self = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_SELF, &self);
  return whale::exec::make_nccl_communicator(self, 0);
}

const std::vector<float> kValues = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f};

}  // namespace

TEST_CASE("NCCL on one rank: all-reduce, reduce-scatter and all-gather leave the input") {
  auto comm = one_rank_nccl();
  CHECK(comm->rank() == 0);
  CHECK(comm->size() == 1);
  DeviceFloats a(kValues.size()), b(kValues.size());

  a.set(kValues);
  comm->all_reduce_sum(a.data, kValues.size());
  CHECK(a.get(kValues.size()) == kValues);

  a.set(kValues);
  comm->start_all_reduce_sum(a.data, kValues.size())->wait();
  CHECK(a.get(kValues.size()) == kValues);

  a.set(kValues);
  comm->start_reduce_scatter_sum(a.data, {kValues.size()})->wait();
  CHECK(a.get(kValues.size()) == kValues);

  a.set(kValues);
  b.set(std::vector<float>(kValues.size(), -1.0f));
  comm->reduce_scatter_sum(a.data, b.data, kValues.size());
  CHECK(b.get(kValues.size()) == kValues);

  b.set(std::vector<float>(kValues.size(), -1.0f));
  comm->all_gather(a.data, b.data, kValues.size());
  CHECK(b.get(kValues.size()) == kValues);
}

int main(int argc, char** argv) {
  if (!whale::exec::test::have_cuda_device()) return whale::exec::test::kSkipExitCode;
  whale::exec::MpiSession mpi(&argc, &argv);
  doctest::Context context(argc, argv);
  return context.run();
}

// File: test_cuda_comm.cpp
// Device tests of the GPU communication path: device pointers are told from host ones and MPI
// refuses them; a one-rank NCCL communicator on the backend's compute stream orders its
// all-reduce between the compute work before and after it, without a host wait; the host
// bridge's CUDA staging copies through pinned memory both ways.
#include <doctest/doctest.h>

#include <cuda_runtime.h>
#include <mpi.h>

#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "comm/pointer_location.h"
#include "whale/exec/comm/mpi_communicator.h"
#include "whale/exec/comm/nccl_communicator.h"
#include "whale/plan/check.h"

using namespace whale::exec;

TEST_CASE("device pointers are told from host pointers, and MPI refuses them") {
  const auto gpu = make_cuda_backend(CudaBackendOptions{0, DType::fp32, false, std::size_t{1} << 28});
  Tensor device(*gpu, 4, DType::fp32);
  std::vector<float> host(4, 1.0f);
  CHECK(is_device_pointer(device.view().data));
  CHECK_FALSE(is_device_pointer(host.data()));
  const MpiSession session;  // one rank: Open MPI's singleton
  auto world = world_communicator();
  CHECK_THROWS_AS(world->all_reduce_sum(device.view().as<float>(), 4), whale::InternalError);
  world->all_reduce_sum(host.data(), 4);  // host memory passes
  CHECK(host == std::vector<float>(4, 1.0f));
  MPI_Comm self = MPI_COMM_NULL;
  REQUIRE(MPI_Comm_dup(MPI_COMM_SELF, &self) == MPI_SUCCESS);
  {
    // One-rank NCCL on the compute stream: upload, all-reduce (the sum of one), scale by 2.
    auto nccl = make_nccl_communicator(self, 0, gpu->native_stream(Stream::compute));
    const std::vector<float> values = {1, 2, 3, 4};
    gpu->upload(device, values.data(), Stream::compute);
    nccl->all_reduce_sum(device.view().as<float>(), 4);
    gpu->scale(device, 2.0);
    auto request = nccl->start_all_reduce_sum(device.view().as<float>(), 4);
    request->wait();
    gpu->scale(device, 0.5);
    std::vector<float> out(4);
    gpu->download(out.data(), device, Stream::compute);
    gpu->synchronize(Stream::compute);
    CHECK(out == values);
    CHECK(request->test());
  }
  // The bridge's staging: host -> device -> host through its pinned buffer.
  auto staging = make_cuda_staging(0, gpu->native_stream(Stream::compute));
  const std::vector<float> sent = {5, 6, 7, 8};
  staging->upload(device.view().as<float>(), sent.data(), 4);
  std::vector<float> back(4);
  staging->download(back.data(), device.view().as<float>(), 4);
  CHECK(back == sent);
}

// File: profile_link_endpoint.cpp
// make_link_endpoint: MPI over host memory for --device cpu, NCCL over device memory for cuda
// (src/cuda); the rank placement both use.
#include <mpi.h>

#include <cstring>
#include <vector>

#include "whale/exec/comm/mpi_communicator.h"
#include "whale/exec/profile/profile_links.h"
#include "whale/exec/profile/profile_output.h"
#include "whale/plan/error.h"
#if defined(WHALE_HAVE_CUDA)
#include "profile/cuda/profile_cuda_factory.h"
#endif

namespace whale::exec {
namespace {

class MpiLinkEndpoint : public LinkEndpoint {
 public:
  explicit MpiLinkEndpoint(std::unique_ptr<Communicator> comm, RankPlacement placement)
      : comm_(std::move(comm)), placement_(placement) {}
  Communicator& communicator() override { return *comm_; }
  float* buffer(std::size_t count) override {
    if (data_.size() < count) data_.assign(count, 0.0f);  // zeros: repeated in-place sums stay finite
    return data_.data();
  }
  std::string transport() const override { return "mpi"; }
  std::string link_kind() const override { return placement_.single_host ? "shm" : "ethernet"; }
  bool single_host() const override { return placement_.single_host; }

 private:
  std::unique_ptr<Communicator> comm_;
  RankPlacement placement_;
  std::vector<float> data_;
};

}  // namespace

RankPlacement world_rank_placement() {
  int rank = 0, size = 0, length = 0;
  WHALE_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  WHALE_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  std::vector<char> mine(MPI_MAX_PROCESSOR_NAME, '\0');
  WHALE_MPI_CHECK(MPI_Get_processor_name(mine.data(), &length));
  std::vector<char> all(static_cast<std::size_t>(MPI_MAX_PROCESSOR_NAME) * size, '\0');
  WHALE_MPI_CHECK(MPI_Allgather(mine.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(),
                                MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD));
  RankPlacement placement;
  for (int r = 0; r < size; ++r) {
    const bool same = std::strncmp(all.data() + static_cast<std::size_t>(r) *
                                                    MPI_MAX_PROCESSOR_NAME,
                                   mine.data(), MPI_MAX_PROCESSOR_NAME) == 0;
    if (!same) placement.single_host = false;
    if (same && r < rank) ++placement.local_rank;
  }
  return placement;
}

void check_writable_on_rank0(const std::string& path) {
  int rank = 0;
  WHALE_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  std::string refusal;
  if (rank == 0) {
    try {
      check_writable(path);
    } catch (const Error& e) {
      refusal = e.what();
    }
  }
  int length = static_cast<int>(refusal.size());
  WHALE_MPI_CHECK(MPI_Bcast(&length, 1, MPI_INT, 0, MPI_COMM_WORLD));
  if (length == 0) return;
  refusal.resize(length);
  WHALE_MPI_CHECK(MPI_Bcast(&refusal[0], length, MPI_CHAR, 0, MPI_COMM_WORLD));
  throw Error("", "", refusal);
}

std::unique_ptr<LinkEndpoint> make_link_endpoint(const DeviceSpec& device) {
  int size = 0;
  WHALE_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  if (size < 2)
    throw Error("", "--links", "at least 2 ranks to time links, got 1",
                "run it as mpirun -np 2 whale-profile --links");
  const RankPlacement placement = world_rank_placement();
  if (device.kind == DeviceSpec::Kind::cpu)
    return std::make_unique<MpiLinkEndpoint>(world_communicator(), placement);
#if defined(WHALE_HAVE_CUDA)
  return make_nccl_link_endpoint(device.index, placement);
#else
  throw Error("", "--device", "no CUDA device: this whale was built without CUDA",
              "use --device cpu to time the links with MPI");
#endif
}

}  // namespace whale::exec

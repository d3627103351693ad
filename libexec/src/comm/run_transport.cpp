// File: run_transport.cpp
// PeerTransport over MPI: MPI_Isend of owned copies, MPI_Recv, MPI_Allreduce of doubles and
// MPI_Gatherv of bytes, on a private duplicate of MPI_COMM_WORLD.
#include "whale/exec/comm/run_transport.h"

#include <climits>
#include <list>
#include <stdexcept>

#include "comm/pointer_location.h"
#include "whale/exec/comm/mpi_communicator.h"

namespace whale::exec {
namespace {

int checked_count(std::size_t count) {
  if (count > static_cast<std::size_t>(INT_MAX))
    throw std::length_error("message of " + std::to_string(count) + " elements exceeds INT_MAX");
  return static_cast<int>(count);
}

class MpiTransport : public PeerTransport {
 public:
  MpiTransport() {
    WHALE_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &comm_));
    WHALE_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
    WHALE_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
    WHALE_MPI_CHECK(MPI_Comm_size(comm_, &size_));
  }
  ~MpiTransport() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    for (Pending& p : pending_) MPI_Wait(&p.request, MPI_STATUS_IGNORE);
    MPI_Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void post_send(const float* data, std::size_t count, int peer, int tag) override {
    check_host_pointer(data, "PeerTransport::post_send");
    pending_.push_back(Pending{std::vector<float>(data, data + count), MPI_REQUEST_NULL});
    Pending& p = pending_.back();
    WHALE_MPI_CHECK(MPI_Isend(p.copy.data(), checked_count(count), MPI_FLOAT, peer, tag, comm_,
                              &p.request));
  }

  void recv(float* data, std::size_t count, int peer, int tag) override {
    check_host_pointer(data, "PeerTransport::recv");
    MPI_Status status;
    WHALE_MPI_CHECK(MPI_Recv(data, checked_count(count), MPI_FLOAT, peer, tag, comm_, &status));
    int received = 0;
    WHALE_MPI_CHECK(MPI_Get_count(&status, MPI_FLOAT, &received));
    if (received != static_cast<int>(count))
      throw std::runtime_error("receive from rank " + std::to_string(peer) + " (tag " +
                               std::to_string(tag) + "): expected " + std::to_string(count) +
                               " floats, got " + std::to_string(received));
  }

  void wait_sends() override {
    for (Pending& p : pending_) WHALE_MPI_CHECK(MPI_Wait(&p.request, MPI_STATUS_IGNORE));
    pending_.clear();
  }

  void sum(std::vector<double>& values) override {
    if (size_ == 1 || values.empty()) return;
    WHALE_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, values.data(), checked_count(values.size()),
                                  MPI_DOUBLE, MPI_SUM, comm_));
  }

  void barrier() override { WHALE_MPI_CHECK(MPI_Barrier(comm_)); }

  std::vector<std::string> gather_to_root(const std::string& bytes) override {
    int length = checked_count(bytes.size());
    std::vector<int> lengths(rank_ == 0 ? size_ : 0), offsets(lengths.size());
    WHALE_MPI_CHECK(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, comm_));
    std::string all;
    if (rank_ == 0) {
      std::size_t total = 0;
      for (int r = 0; r < size_; ++r) {
        offsets[r] = checked_count(total);
        total += lengths[r];
      }
      all.resize(total);
    }
    WHALE_MPI_CHECK(MPI_Gatherv(bytes.data(), length, MPI_CHAR, all.data(), lengths.data(),
                                offsets.data(), MPI_CHAR, 0, comm_));
    std::vector<std::string> parts;
    for (int r = 0; r < static_cast<int>(lengths.size()); ++r)
      parts.push_back(all.substr(offsets[r], lengths[r]));
    return parts;
  }

 private:
  struct Pending {
    std::vector<float> copy;
    MPI_Request request;
  };
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  std::list<Pending> pending_;  // a list: the copies must not move while in flight
};

}  // namespace

std::unique_ptr<PeerTransport> make_mpi_transport() { return std::make_unique<MpiTransport>(); }

}  // namespace whale::exec

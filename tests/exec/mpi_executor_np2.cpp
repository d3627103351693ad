// File: mpi_executor_np2.cpp
// Two ranks: the PeerTransport never deadlocks when both ranks send large messages to each
// other first; gathers and sums are exact and ordered; an Executor of pp2-1f1b restored from
// save_state continues bit for bit.
#include <doctest/doctest.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "whale/exec/runtime/data_loader.h"
#include "whale/exec/runtime/executor.h"
#include "whale/exec/comm/mpi_communicator.h"
#include "whale/exec/runtime/rank_layout.h"
#include "whale/exec/comm/run_transport.h"

using namespace whale::exec;

namespace {
MpiSession session;  // MPI_Init before doctest's main, MPI_Finalize after it

const char* kData = WHALE_SOURCE_DIR "/data/corpus.txt";

// Fails a hung test fast, with its name, instead of leaving it to ctest's timeout: unless
// disarmed (destroyed) within `bound`, prints the name and ends the process with exit code 1,
// which makes mpirun end the other rank too. The bound is generous for a loaded machine.
class Watchdog {
 public:
  Watchdog(const char* name, std::chrono::seconds bound) : thread_([this, name, bound] {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!cv_.wait_for(lock, bound, [this] { return done_; })) {
      std::fprintf(stderr, "error: test \"%s\" hung for %lld s; aborting\n", name,
                   static_cast<long long>(bound.count()));
      std::fflush(stderr);
      std::_Exit(1);
    }
  }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;  // last: starts once the members it uses exist
};
}  // namespace

TEST_CASE("both ranks send 4 MB to each other before receiving, without deadlock") {
  const Watchdog watchdog("both ranks send 4 MB to each other before receiving, without deadlock",
                          std::chrono::seconds(60));
  auto transport = make_mpi_transport();
  const int peer = 1 - transport->rank();
  std::vector<float> mine(1 << 20, static_cast<float>(transport->rank() + 1)), theirs(1 << 20);
  transport->post_send(mine.data(), mine.size(), peer, 5);
  mine.assign(mine.size(), -1.0f);  // the transport sends its own copy
  transport->recv(theirs.data(), theirs.size(), peer, 5);
  transport->wait_sends();
  CHECK(theirs.front() == static_cast<float>(peer + 1));
  CHECK(theirs.back() == static_cast<float>(peer + 1));
}

TEST_CASE("gather_to_root orders by rank and sum adds exactly") {
  auto transport = make_mpi_transport();
  const auto parts = transport->gather_to_root(transport->rank() == 0 ? "a" : "bc");
  if (transport->rank() == 0) CHECK(parts == std::vector<std::string>{"a", "bc"});
  if (transport->rank() == 1) CHECK(parts.empty());
  std::vector<double> values = {0.5 + transport->rank(), 1e-17};
  transport->sum(values);
  CHECK(values == std::vector<double>{2.0, 2e-17});
}

TEST_CASE("a pp2 executor restored from save_state continues bit for bit") {
  const whale::plan::Plan plan = whale::plan::load_plan("configs/plans/tiny/pp2-1f1b.yaml");
  const RankLayout layout(plan);
  auto world = world_communicator();
  auto transport = make_mpi_transport();
  const DataLoader loader(load_tokens(kData), plan, 3);
  ExecutorOptions options;
  options.seed = 3;
  Executor first(plan, layout, *world, *transport, options);
  first.train_step(loader, 0);
  const std::vector<float> state = first.save_state();
  const double second_step = first.train_step(loader, 1);

  Executor second(plan, layout, *world, *transport, options);
  CHECK(second.save_state() != state);  // fresh parameters, zero moments
  second.load_state(state);
  CHECK(second.train_step(loader, 1) == second_step);
  CHECK_THROWS_AS(second.load_state(std::vector<float>(3)), std::invalid_argument);
}

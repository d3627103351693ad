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

// ZeRO-1 (dp2-zero) against plain data parallelism (dp2), the same plan otherwise: every step's
// loss and the parameters after it agree bit for bit (AdamW is element-wise, the all-gather
// copies), and the sharded rank holds less: the moments of the other half of the parameters
// (2 x 4 bytes each), since the all-gather of the updated shards lands in the gradient buffer
// rather than in a buffer of its own.
TEST_CASE("ZeRO-1 trains as dp2 does and holds the moments of half the parameters less") {
  const whale::plan::Plan plain = whale::plan::load_plan("configs/plans/tiny/dp2.yaml");
  const whale::plan::Plan zero = whale::plan::load_plan("configs/plans/tiny/dp2-zero.yaml");
  auto world = world_communicator();
  auto transport = make_mpi_transport();
  const DataLoader loader(load_tokens(kData), plain, 3);
  ExecutorOptions options;
  options.seed = 3;
  Executor replicated(plain, RankLayout(plain), *world, *transport, options);
  Executor sharded(zero, RankLayout(zero), *world, *transport, options);
  for (int64_t step = 0; step < 2; ++step)
    CHECK(sharded.train_step(loader, step) == replicated.train_step(loader, step));
  const std::vector<FullParameter> a = replicated.gather_parameters(), b = sharded.gather_parameters();
  REQUIRE(a.size() == b.size());
  std::size_t total = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].values == b[i].values);
    total += a[i].values.size();
  }
  // tiny: 8 blocks of 49,984 (h 64, ffn 256: two layernorms 2 x 128, qkv 12,480, out 4,160, fc1
  // 16,640, fc2 16,448) + the token table 256 x 64 + the position table 32 x 64 + the final
  // layernorm 128 + the LM head 64 x 256 = 434,816 parameters (gathered on rank 0); each
  // rank's shard is 217,408.
  if (world->rank() == 0) CHECK(total == 434816);
  CHECK(replicated.peak_memory_bytes() - sharded.peak_memory_bytes() == 2 * 217408 * 4);
}

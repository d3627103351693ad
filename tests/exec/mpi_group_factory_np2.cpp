// File: mpi_group_factory_np2.cpp
// Two ranks: the Executor makes its communicators only through its group factory, one per
// rank_groups entry, and its tensor-parallel region, gradient buckets, ZeRO gather and tied
// token table call exactly those communicators; observed by a factory that counts the calls
// on the real MPI communicators it wraps, with losses bit-identical to the default factory's.
#include <doctest/doctest.h>

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "whale/exec/comm/mpi_communicator.h"
#include "whale/exec/comm/run_transport.h"
#include "whale/exec/runtime/data_loader.h"
#include "whale/exec/runtime/executor.h"
#include "whale/exec/runtime/rank_communicators.h"
#include "whale/plan/gradient_buckets.h"

using namespace whale::exec;

namespace {
MpiSession session;  // MPI_Init before doctest's main, MPI_Finalize after it

const char* kData = WHALE_SOURCE_DIR "/data/corpus.txt";

using Calls = std::map<std::string, int>;  // call name -> count

/// Forwards every call to `inner` (a real communicator) and counts it.
class CountingCommunicator : public Communicator {
 public:
  CountingCommunicator(std::unique_ptr<Communicator> inner, Calls& calls)
      : inner_(std::move(inner)), calls_(calls) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  void all_reduce_sum(float* data, std::size_t count) override {
    ++calls_["all_reduce_sum"];
    inner_->all_reduce_sum(data, count);
  }
  std::unique_ptr<CommRequest> start_all_reduce_sum(float* data, std::size_t count) override {
    ++calls_["start_all_reduce_sum"];
    return inner_->start_all_reduce_sum(data, count);
  }
  std::unique_ptr<CommRequest> start_reduce_scatter_sum(
      float* data, const std::vector<std::size_t>& counts) override {
    ++calls_["start_reduce_scatter_sum"];
    return inner_->start_reduce_scatter_sum(data, counts);
  }
  void reduce_scatter_sum(const float* input, float* output, std::size_t n) override {
    ++calls_["reduce_scatter_sum"];
    inner_->reduce_scatter_sum(input, output, n);
  }
  void all_gather(const float* input, float* output, std::size_t n) override {
    ++calls_["all_gather"];
    inner_->all_gather(input, output, n);
  }
  void send(const float* data, std::size_t count, int peer, int tag) override {
    ++calls_["send"];
    inner_->send(data, count, peer, tag);
  }
  void recv(float* data, std::size_t count, int peer, int tag) override {
    ++calls_["recv"];
    inner_->recv(data, count, peer, tag);
  }
  std::unique_ptr<Communicator> subgroup(const std::vector<int>& members) override {
    ++calls_["subgroup"];
    return inner_->subgroup(members);
  }

 private:
  std::unique_ptr<Communicator> inner_;
  Calls& calls_;
};

/// The world factory (MPI here: CPU ranks), recording each group it was asked for and
/// counting the calls on each communicator it made.
class RecordingFactory : public GroupCommunicatorFactory {
 public:
  std::unique_ptr<Communicator> make(const RankGroup& group) override {
    made.push_back(std::string(to_string(group.purpose)) + " " + to_string(group.transport));
    calls.emplace_back();
    return std::make_unique<CountingCommunicator>(world_->make(group), calls.back());
  }
  std::vector<std::string> made;
  std::deque<Calls> calls;  // a deque: references to its elements survive emplace_back

 private:
  std::unique_ptr<GroupCommunicatorFactory> world_ = make_world_group_factory(-1, nullptr);
};

/// Losses of `steps` steps of `plan` on this rank, through `factory` (null: the default).
std::vector<double> losses(const whale::plan::Plan& plan, GroupCommunicatorFactory* factory,
                           int steps) {
  const RankLayout layout(plan);
  auto world = world_communicator();
  auto transport = make_mpi_transport();
  const DataLoader loader(load_tokens(kData), plan, 5);
  ExecutorOptions options;
  options.seed = 5;
  options.group_factory = factory;
  Executor executor(plan, layout, *world, *transport, options);
  std::vector<double> out;
  for (int step = 0; step < steps; ++step) out.push_back(executor.train_step(loader, step));
  return out;
}

}  // namespace

TEST_CASE("ZeRO-2 dp2: buckets reduce-scatter and parameters gather on the data group only") {
  const whale::plan::Plan plan = whale::plan::load_plan("configs/plans/tiny/dp2-zero2.yaml");
  RecordingFactory factory;
  const std::vector<double> observed = losses(plan, &factory, 2);
  CHECK(observed == losses(plan, nullptr, 2));
  REQUIRE(factory.made == std::vector<std::string>{"data mpi"});
  const int buckets = static_cast<int>(whale::plan::gradient_buckets(plan, 0).size());
  CHECK(buckets > 1);
  CHECK(factory.calls[0] == Calls{{"start_reduce_scatter_sum", 2 * buckets}, {"all_gather", 2}});
}

TEST_CASE("tp2: the tensor-parallel region's all-reduces go to the tensor group") {
  const whale::plan::Plan plan = whale::plan::load_plan("configs/plans/tiny/tp2.yaml");
  RecordingFactory factory;
  const std::vector<double> observed = losses(plan, &factory, 1);
  CHECK(observed == losses(plan, nullptr, 1));
  REQUIRE(factory.made == std::vector<std::string>{"tensor mpi"});
  // The region's borders (no sequence parallelism) all-reduce, and nothing else reaches it.
  REQUIRE(factory.calls[0].size() == 1);
  CHECK(factory.calls[0].count("all_reduce_sum") == 1);
  CHECK(factory.calls[0].at("all_reduce_sum") > 0);
}

TEST_CASE("pp2 with a tied head: the token table's gradients are summed on the tied group") {
  const whale::plan::Plan plan = whale::plan::load_plan("configs/plans/tiny-llama/pp2.yaml");
  RecordingFactory factory;
  const std::vector<double> observed = losses(plan, &factory, 2);
  CHECK(observed == losses(plan, nullptr, 2));
  REQUIRE(factory.made == std::vector<std::string>{"tied-embedding mpi"});
  CHECK(factory.calls[0] == Calls{{"all_reduce_sum", 2}});  // once a step
}

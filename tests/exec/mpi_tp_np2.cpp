// File: mpi_tp_np2.cpp
// Two ranks: MPI Communicator collectives give exact sums and ordered gathers; a tp=2 GPT stage
// matches the tp=1 stage (loss, input gradient, reassembled parameter gradients) within 1e-5.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "host_views.h"
#include "whale/exec/comm/mpi_communicator.h"
#include "whale/exec/model/stage_module.h"
#include "whale/exec/model/tensor_shard.h"
#include "whale/plan/error.h"

using namespace whale::exec;

namespace {
MpiSession session;  // MPI_Init before doctest's main, MPI_Finalize after it
}

TEST_CASE("world communicator has two ranks") {
  auto world = world_communicator();
  CHECK(world->size() == 2);
  CHECK((world->rank() == 0 || world->rank() == 1));
}

TEST_CASE("all_reduce_sum gives exact sums, identical on every rank") {
  auto world = world_communicator();
  const int r = world->rank();
  std::vector<float> data = {1.0f + r, 0.5f * r, -3.0f, 1e8f * (1 - r), 7.0f};
  world->all_reduce_sum(data.data(), data.size());
  CHECK(data == std::vector<float>{3.0f, 0.5f, -6.0f, 1e8f, 14.0f});
}

TEST_CASE("reduce_scatter_sum gives each rank its block of the sum") {
  auto world = world_communicator();
  const int r = world->rank();
  std::vector<float> input = {1.0f, 2.0f, 10.0f + r, 20.0f};  // two blocks of 2
  std::vector<float> output(2);
  world->reduce_scatter_sum(input.data(), output.data(), 2);
  if (r == 0) CHECK(output == std::vector<float>{2.0f, 4.0f});
  if (r == 1) CHECK(output == std::vector<float>{21.0f, 40.0f});
}

TEST_CASE("all_gather concatenates in rank order") {
  auto world = world_communicator();
  const float r = static_cast<float>(world->rank());
  std::vector<float> input = {r, r + 0.25f}, output(4);
  world->all_gather(input.data(), output.data(), 2);
  CHECK(output == std::vector<float>{0.0f, 0.25f, 1.0f, 1.25f});
}

TEST_CASE("send and recv move exact floats between the ranks") {
  auto world = world_communicator();
  std::vector<float> buffer(3);
  if (world->rank() == 0) {
    buffer = {1.5f, -2.0f, 3.25f};
    world->send(buffer.data(), 3, 1, 7);
  } else {
    world->recv(buffer.data(), 3, 0, 7);
    CHECK(buffer == std::vector<float>{1.5f, -2.0f, 3.25f});
  }
}

TEST_CASE("a receive of the wrong length names the counts") {
  auto world = world_communicator();
  std::vector<float> buffer(4, 1.0f);
  if (world->rank() == 0) {
    world->send(buffer.data(), 2, 1, 9);
  } else {
    CHECK_THROWS_WITH(world->recv(buffer.data(), 4, 0, 9),
                      doctest::Contains("expected 4 floats from rank 0 (tag 9), got 2"));
  }
}

TEST_CASE("subgroups: a one-member group and the reversed pair") {
  auto world = world_communicator();
  const int r = world->rank();
  auto alone = world->subgroup({r});
  CHECK(alone->size() == 1);
  CHECK(alone->rank() == 0);
  float x = 5.0f;
  alone->all_reduce_sum(&x, 1);
  CHECK(x == 5.0f);
  auto reversed = world->subgroup({1, 0});
  CHECK(reversed->rank() == 1 - r);
  std::vector<float> in = {static_cast<float>(r)}, out(2);
  reversed->all_gather(in.data(), out.data(), 1);
  CHECK(out == std::vector<float>{1.0f, 0.0f});
}

TEST_CASE("WHALE_MPI_CHECK names the call, file and line") {
  auto world = world_communicator();
  std::vector<float> buffer(1);
  // Rank 5 does not exist in a world of two: MPI returns an error, the check throws.
  CHECK_THROWS_WITH(world->send(buffer.data(), 1, 5, 0),
                    doctest::Contains("MPI call MPI_Send"));
  CHECK_THROWS_WITH(world->send(buffer.data(), 1, 5, 0),
                    doctest::Contains("mpi_communicator.cpp:"));
}

namespace {

/// The fp32 CPU backend of this rank's stages (it outlives them all).
Backend& cpu() {
  static const std::unique_ptr<Backend> backend = test::make_cpu_backend();
  return *backend;
}

std::vector<float> floats(ConstTensorView view) { return test::host_floats(cpu(), view); }


whale::plan::Model tp_model() {
  whale::plan::Model m;
  m.family = "gpt";
  m.num_layers = 2;
  m.hidden = 16;
  m.heads = 4;
  m.ffn_hidden = 40;
  m.sequence = 8;
  m.vocabulary = 32;
  return m;
}

double relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double diff = 0.0, norm = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff += std::pow(static_cast<double>(a[i]) - b[i], 2);
    norm += static_cast<double>(b[i]) * b[i];
  }
  return norm == 0.0 ? std::sqrt(diff) : std::sqrt(diff / norm);
}

/// The full tensors (values or gradients) of a tp stage, reassembled from every tp rank.
std::map<std::string, std::vector<float>> reassemble(StageModule& stage, Communicator& tp,
                                                     const whale::plan::Model& m,
                                                     bool gradients) {
  std::map<std::string, std::vector<float>> full;
  for (const ParameterView& v : stage.parameters()) {
    const std::vector<float> mine = floats(gradients ? v.gradient : v.value);
    std::vector<float> all(v.count * tp.size());
    tp.all_gather(mine.data(), all.data(), v.count);
    std::vector<float>& f = full[v.name];
    for (int r = 0; r < tp.size(); ++r) {
      const TensorShard layout = gpt_parameter_shard(m, v.name, r, tp.size());
      REQUIRE(layout.shard_count() == v.count);
      f.resize(layout.full_count());
      if (layout.replicated()) {  // identical on every tp rank, bit for bit
        CHECK(std::vector<float>(all.begin(), all.begin() + v.count) ==
              std::vector<float>(all.begin() + r * v.count, all.begin() + (r + 1) * v.count));
      }
      insert_shard(layout, all.data() + r * v.count, f.data());
    }
  }
  return full;
}

std::map<std::string, std::vector<float>> tensors_of(StageModule& stage, bool gradients) {
  std::map<std::string, std::vector<float>> t;
  for (const ParameterView& v : stage.parameters())
    t[v.name] = floats(gradients ? v.gradient : v.value);
  return t;
}

}  // namespace

TEST_CASE("tp=2 stage matches tp=1: loss, input gradient, reassembled parameter gradients") {
  auto world = world_communicator();
  const whale::plan::Model m = tp_model();
  const int L = m.num_layers, samples = 2;
  using whale::plan::Recompute;
  for (const auto& [recompute, sequence_parallel] :
       std::vector<std::pair<Recompute, bool>>{{Recompute::none, false},
                                               {Recompute::selective, false},
                                               {Recompute::none, true},
                                               {Recompute::selective, true},
                                               {Recompute::full, true}}) {
    const bool sp = sequence_parallel;  // named: INFO's lambda cannot capture bindings
    INFO("sequence_parallel " << sp);
    StageModuleOptions single;
    single.first_layer = 1;  // blocks and head: the input gradient is checked too
    single.end_layer = L + 2;
    single.seed = 42;
    single.recompute = recompute;
    StageModuleOptions sharded = single;
    sharded.tp_rank = world->rank();
    sharded.tp_size = 2;
    sharded.sequence_parallel = sp;
    auto reference = make_gpt_stage(m, single, cpu(), nullptr);
    auto stage = make_gpt_stage(m, sharded, cpu(), world.get());

    std::mt19937 rng(5);
    MicroBatchTokens tokens;
    tokens.samples = samples;
    for (int i = 0; i < samples * m.sequence; ++i) tokens.targets.push_back(rng() % 32);
    tokens.inputs = tokens.targets;
    std::vector<float> input(samples * m.sequence * m.hidden);
    for (std::size_t i = 0; i < input.size(); ++i) input[i] = std::cos(0.11 * i);
    std::vector<float> grad_ref(input.size()), grad_tp(input.size());
    const double scale = 1.0 / (samples * m.sequence);

    CHECK(reassemble(*stage, *world, m, false) == tensors_of(*reference, false));
    reference->zero_gradients();
    stage->zero_gradients();
    const double loss_ref = reference->forward(0, tokens, input.data(), nullptr);
    const double loss_tp = stage->forward(0, tokens, input.data(), nullptr);
    CHECK(loss_tp == doctest::Approx(loss_ref).epsilon(1e-5));
    reference->backward(0, nullptr, grad_ref.data(), scale);
    stage->backward(0, nullptr, grad_tp.data(), scale);
    CHECK(relative_difference(grad_tp, grad_ref) <= 1e-5);

    const auto full = reassemble(*stage, *world, m, true);
    const auto expected = tensors_of(*reference, true);
    REQUIRE(full.size() == expected.size());
    for (const auto& entry : expected) {
      const auto& name = entry.first;  // named references: INFO's lambda cannot capture bindings
      const auto& g = entry.second;
      INFO(name);
      CHECK(relative_difference(full.at(name), g) <= 1e-5);
    }
  }
}

TEST_CASE("sequence parallelism needs the tp degree to divide the sequence") {
  auto world = world_communicator();
  whale::plan::Model m = tp_model();
  m.sequence = 7;
  StageModuleOptions options;
  options.first_layer = 1;
  options.end_layer = m.num_layers + 2;
  options.tp_rank = world->rank();
  options.tp_size = 2;
  options.sequence_parallel = true;
  CHECK_THROWS_WITH_AS(make_gpt_stage(m, options, cpu(), world.get()),
                       doctest::Contains("sequence: a sequence divisible by the tensor-parallel "
                                         "degree 2 under sequence parallelism, got 7"),
                       whale::Error);
  options.sequence_parallel = false;  // tensor parallelism alone splits heads, not positions
  CHECK_NOTHROW(make_gpt_stage(m, options, cpu(), world.get()));
}

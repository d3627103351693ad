// File: test_plan_runtime.cpp
// The runtime feature check (whale-run executes every strategy the planner knows), and the
// validation of the newer stage fields.
#include <doctest/doctest.h>

#include <string>

#include "whale/plan/error.h"
#include "whale/plan/plan.h"
#include "whale/plan/plan_runtime.h"

using namespace whale;

namespace {

const std::string kPlan =
    std::string(WHALE_SOURCE_DIR) + "/configs/validation/korthikanti-2022/175b-64gpu-";

}  // namespace

TEST_CASE("whale-run executes sequence parallelism and sharded gradients: nothing is refused") {
  plan::Plan p = plan::load_plan(kPlan + "sequence-parallel-selective.yaml");
  CHECK(p.stages[3].sequence_parallel);
  p.stages[5].shard_optimizer = true;
  p.stages[5].shard_gradients = true;
  CHECK_NOTHROW(plan::validate_plan(p));
  CHECK(plan::unsupported_by_runtime(p).empty());
  CHECK_NOTHROW(plan::check_runnable(p));
  const plan::SearchStrategies runnable = plan::runnable_strategies();
  CHECK(runnable.sequence_parallel);
  CHECK(runnable.shard_gradients);
}

TEST_CASE("sequence_parallel needs tp > 1 dividing the sequence; shard_gradients needs shard_optimizer") {
  plan::Plan p = plan::load_plan(kPlan + "sequence-parallel-selective.yaml");
  CHECK(p.stages[0].sequence_parallel);
  CHECK_NOTHROW(plan::validate_plan(p));
  const std::string text = plan::plan_to_yaml(p, false);
  CHECK(text.find("sequence_parallel: true") != std::string::npos);
  CHECK(text.find("shard_gradients") == std::string::npos);
  plan::Plan bad = p;
  bad.model.sequence = 2044;  // not a multiple of tp 8
  CHECK_THROWS_WITH_AS(plan::validate_plan(bad),
                       doctest::Contains("stages[0].sequence_parallel: tp 8 does not divide the model's sequence 2044"),
                       Error);
  bad = p;
  bad.model.vocabulary = 4;  // fewer rows of the token table than tp 8 has ranks
  CHECK_THROWS_WITH_AS(plan::validate_plan(bad),
                       doctest::Contains("stages[0].tp: tp 8 exceeds the model's vocabulary of 4 tokens"),
                       Error);
  bad = p;
  bad.stages[0].shard_gradients = true;
  CHECK_THROWS_WITH_AS(plan::validate_plan(bad),
                       doctest::Contains("stages[0].shard_gradients: shard_gradients needs shard_optimizer: true"),
                       Error);
}

TEST_CASE("sequence_parallel at tp 1 is refused with the field's path") {
  plan::Plan p = plan::load_plan(kPlan + "sequence-parallel-selective.yaml");
  p.stages[2].tp = 1;
  p.stages[2].devices.resize(1);
  p.stages[2].shares = {1};
  CHECK_THROWS_WITH_AS(plan::validate_plan(p),
                       doctest::Contains("stages[2].sequence_parallel: sequence_parallel needs tp > 1, got tp 1"),
                       Error);
}

// File: test_expert_groups.cpp
// validate_expert_layout: the expert layouts whale-run runs and the one error naming the field
// for each it refuses.
#include <doctest/doctest.h>

#include <string>

#include "runtime/expert_groups.h"
#include "whale/plan/error.h"

using whale::Error;
using whale::exec::validate_expert_layout;
using whale::plan::load_plan;
using whale::plan::Plan;

namespace {

/// The field of the error validate_expert_layout throws for `plan`, "" when it accepts it.
std::string refused_field(const Plan& plan) {
  try {
    validate_expert_layout(plan);
  } catch (const Error& e) {
    return e.yaml_path();
  }
  return "";
}

}  // namespace

TEST_CASE("validate_expert_layout: shipped MoE plans pass, the folded ones and sequence parallelism too; an expert_tp neither dividing tp nor a multiple of it and ep are refused") {
  const Plan ep2 = load_plan("configs/plans/tiny-moe/ep2.yaml");
  CHECK(refused_field(ep2) == "");
  CHECK(refused_field(load_plan("configs/plans/tiny-moe/ep2-dp2-pp2.yaml")) == "");
  CHECK(refused_field(load_plan("configs/plans/tiny/dp2.yaml")) == "");
  CHECK(refused_field(load_plan("configs/plans/tiny-moe/tp2.yaml")) == "");
  CHECK(refused_field(load_plan("configs/plans/tiny-moe/tp2-ep2.yaml")) == "");

  Plan zero = ep2;
  zero.stages[0].shard_optimizer = true;  // ZeRO-1: experts sharded over expert dp, the rest dp
  CHECK(refused_field(zero) == "");
  zero.stages[0].shard_gradients = true;  // ZeRO-2: each kind reduce-scattered over its group
  CHECK(refused_field(zero) == "");
  Plan tp = load_plan("configs/plans/tiny-moe/tp2-ep2.yaml");
  tp.stages[0].expert_tp = 2;  // the stage's tp, written out
  CHECK(refused_field(tp) == "");
  tp.stages[0].expert_tp = 1;  // the folded layout: ep 2 x expert_tp 1 x expert dp 2
  CHECK(refused_field(tp) == "");
  tp.stages[0].ep = 4;  // ep 4 x expert_tp 1 over both replicas' 4 ranks
  CHECK(refused_field(tp) == "");
  tp.stages[0].ep = 3;  // 3 does not divide the 4 experts
  CHECK(refused_field(tp) == "stages[0].ep");
  tp.stages[0].ep = 2;
  tp.stages[0].expert_tp = 0;
  tp.stages[0].sequence_parallel = true;
  CHECK(refused_field(tp) == "");
  Plan expert_tp = ep2;
  expert_tp.stages[0].expert_tp = 2;  // above the stage's tp 1: a multiple of it
  expert_tp.stages[0].ep = 1;
  CHECK(refused_field(expert_tp) == "");
  CHECK(refused_field(load_plan("configs/plans/tiny-moe/tp2-dp2-etp4-sp.yaml")) == "");
  Plan folded = load_plan("configs/plans/tiny-moe/tp2-ep2-folded.yaml");
  CHECK(refused_field(folded) == "");
  CHECK(refused_field(load_plan("configs/plans/tiny-moe/tp4-ep2-etp2-folded.yaml")) == "");
  folded.stages[0].ep = 1;  // expert dp 2 where the stage's dp is 1: the experts' buckets alone
  CHECK(refused_field(folded) == "");
  CHECK(refused_field(load_plan("configs/plans/tiny-moe/tp2-expert-dp2-zero2.yaml")) == "");
  Plan tp4 = load_plan("configs/plans/tiny-moe/tp4-ep2-etp2-folded.yaml");
  tp4.stages[0].expert_tp = 3;  // neither divides tp 4 nor is a multiple of it
  CHECK(refused_field(tp4) == "stages[0].expert_tp");
  Plan uneven = load_plan("configs/plans/tiny-moe/ep2-dp2-pp2.yaml");
  uneven.stages[1].ep = 4;
  CHECK(refused_field(uneven) == "");  // 4 divides dp 4 and the 4 experts
  uneven.stages[1].ep = 3;
  CHECK(refused_field(uneven) == "stages[1].ep");
  Plan dense = load_plan("configs/plans/tiny/dp2.yaml");
  dense.stages[0].ep = 2;
  CHECK(refused_field(dense) == "stages[0].ep");
}

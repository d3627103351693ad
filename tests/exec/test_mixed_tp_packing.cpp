// File: test_mixed_tp_packing.cpp
// mixed_tp_packing on the tiny GPT's first block at replica_tp [2, 1] (configs/plans/tiny/
// mixed-tp.yaml): the exact segments of each finest piece in the flat gradient buffer of a tp-1
// rank (two pieces, column splits row by row) and of a tp-2 rank (its shard is one piece), and
// the replicated parameters counted once per replica.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "runtime/mixed_tp_packing.h"
#include "whale/plan/plan.h"

using namespace whale::exec;

namespace {

/// Four parameters of block 0 (model layer 1), in module order, with this shard's counts; the
/// tiny GPT has hidden 64, ffn 256.
std::vector<ParameterView> block0_views(int tp) {
  auto view = [](const std::string& name, std::size_t count, bool replicated) {
    ParameterView v;
    v.name = "layers.0." + name;
    v.count = count;
    v.tp_replicated = replicated;
    v.layer = 1;
    return v;
  };
  const std::size_t t = static_cast<std::size_t>(tp);
  return {view("ln1.weight", 64, true), view("attn.qkv.weight", 192 * 64 / t, false),
          view("attn.proj.weight", 64 * 64 / t, false), view("mlp.fc1.weight", 256 * 64 / t, false)};
}

const whale::plan::Plan& mixed_plan() {
  static const whale::plan::Plan plan = whale::plan::load_plan("configs/plans/tiny/mixed-tp.yaml");
  return plan;
}

std::vector<PackedGradients> packing_of(int replica, int tp_rank) {
  const whale::plan::Stage& stage = mixed_plan().stages[0];
  const StageRole role{0, replica, tp_rank};
  const auto packing = mixed_tp_packing(mixed_plan().model, stage, role,
                                        block0_views(stage.replica_tp(replica)),
                                        {whale::plan::GradientBucket{1, 2, 0, 0}});
  REQUIRE(packing.size() == 1);
  return packing[0];
}

}  // namespace

TEST_CASE("a tp-1 replica packs both finest pieces of every split parameter") {
  // Flat buffer: ln1.weight [0, 64), qkv [64, 12352), proj [12352, 16448), fc1 [16448, 32832).
  const std::vector<PackedGradients> runs = packing_of(1, 0);
  REQUIRE(runs.size() == 3);
  for (int piece = 0; piece < 2; ++piece) {
    const PackedGradients& run = runs[piece];
    CHECK(run.group == piece);
    CHECK(run.contributes);
    CHECK(run.count == 16384);  // half of 192x64 + 64x64 + 256x64
    // qkv: rows [32 piece, +32) of each of q, k, v (64 rows apart); proj: columns
    // [32 piece, +32) of each of its 64 rows; fc1: rows [128 piece, +128).
    REQUIRE(run.segments.size() == 3 + 64 + 1);
    const std::size_t p = static_cast<std::size_t>(piece);
    for (std::size_t part = 0; part < 3; ++part) {
      CHECK(run.segments[part].flat_offset == 64 + (part * 64 + p * 32) * 64);
      CHECK(run.segments[part].pack_offset == part * 2048);
      CHECK(run.segments[part].count == 2048);
    }
    for (std::size_t row = 0; row < 64; ++row) {
      CHECK(run.segments[3 + row].flat_offset == 12352 + row * 64 + p * 32);
      CHECK(run.segments[3 + row].pack_offset == 6144 + row * 32);
      CHECK(run.segments[3 + row].count == 32);
    }
    CHECK(run.segments[67].flat_offset == 16448 + p * 128 * 64);
    CHECK(run.segments[67].pack_offset == 8192);
    CHECK(run.segments[67].count == 8192);
  }
  CHECK(runs[2].group == 2);  // the replicated parameters, over the whole stage
  CHECK(runs[2].contributes);
  REQUIRE(runs[2].segments.size() == 1);
  CHECK(runs[2].segments[0].flat_offset == 0);
  CHECK(runs[2].segments[0].count == 64);
}

TEST_CASE("a tp-2 rank's shard is its one piece; only tp rank 0 counts the replicated ones") {
  for (int tp_rank = 0; tp_rank < 2; ++tp_rank) {
    const std::vector<PackedGradients> runs = packing_of(0, tp_rank);
    REQUIRE(runs.size() == 2);
    CHECK(runs[0].group == tp_rank);
    REQUIRE(runs[0].segments.size() == 1);  // qkv, proj and fc1 shards back to back
    CHECK(runs[0].segments[0].flat_offset == 64);
    CHECK(runs[0].segments[0].count == 16384);
    CHECK(runs[1].group == 2);
    CHECK(runs[1].count == 64);
    CHECK(runs[1].contributes == (tp_rank == 0));
  }
}

TEST_CASE("a bucket without split parameters has only the replicated all-reduce") {
  const whale::plan::Stage& stage = mixed_plan().stages[0];
  std::vector<ParameterView> views = block0_views(1);
  views.resize(1);  // ln1.weight alone
  const auto packing = mixed_tp_packing(mixed_plan().model, stage, StageRole{0, 1, 0}, views,
                                        {whale::plan::GradientBucket{1, 2, 0, 0}});
  REQUIRE(packing[0].size() == 1);
  CHECK(packing[0][0].group == 2);
}

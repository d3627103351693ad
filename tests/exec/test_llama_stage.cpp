// File: test_llama_stage.cpp
// The Llama stage on one rank: the parameter list and count of a hand-checkable model, the
// whole-model gradient check against finite differences (tied and untied, with and without
// qkv biases), two chained stages equal one stage, recomputation changes nothing, a tied head's
// stage holds an equal copy of the token table, and the refusals name their field.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "stage_fixtures.h"
#include "whale/exec/model/stage_module.h"
#include "whale/plan/error.h"

using namespace whale;
using namespace whale::exec;
using namespace whale::exec::test;

namespace {

/// C 16, 4 query heads of 4 on 2 key/value heads, SwiGLU width 24, T 8, V 32.
plan::Model tiny_llama(bool tied, bool qkv_bias) {
  plan::Model m;
  m.name = "tiny-llama-test";
  m.source_file = "tiny-llama-test.yaml";
  m.family = "llama";
  m.num_layers = 2;
  m.hidden = 16;
  m.heads = 4;
  m.kv_heads = 2;
  m.ffn_hidden = 24;
  m.sequence = 8;
  m.vocabulary = 32;
  m.tie_embeddings = tied;
  m.qkv_bias = qkv_bias;
  m.rope_theta = 10000;
  return m;
}

std::size_t parameter_count(StageModule& stage) {
  std::size_t n = 0;
  for (const ParameterView& v : stage.parameters()) n += v.count;
  return n;
}

}  // namespace

TEST_CASE("Llama parameters: names, tensor-parallel replication and the hand-counted total") {
  const plan::Model m = tiny_llama(true, true);
  auto stage = make_llama_stage(m, stage_options(0, 4), cpu(), nullptr);
  // embedding 32*16; per block: norm 16, qkv (16 + 2*8)*16 + 32 bias, proj 16*16, norm 16,
  // gate, up and down 3*24*16; head norm 16 (the LM head is the token table).
  const std::size_t block = 16 + 32 * 16 + 32 + 16 * 16 + 16 + 3 * 24 * 16;
  CHECK(parameter_count(*stage) == 32 * 16 + 2 * block + 16);
  const auto views = stage->parameters();
  REQUIRE(views.size() == 1 + 2 * 8 + 1);
  CHECK(views[0].name == "embedding.wte");
  CHECK(views[2].name == "layers.0.attn.qkv.weight");
  CHECK(views[3].name == "layers.0.attn.qkv.bias");
  CHECK(views.back().name == "head.norm.weight");
  for (const ParameterView& v : views)
    CHECK(v.tp_replicated == (v.name.find("norm") != std::string::npos));  // the table: by vocabulary
  CHECK(floats(views[1].value) == std::vector<float>(16, 1.0f));  // attn_norm starts at ones

  auto untied = make_llama_stage(tiny_llama(false, false), stage_options(0, 4), cpu(), nullptr);
  CHECK(parameter_count(*untied) == 32 * 16 + 2 * (block - 32) + 16 + 32 * 16);
}

TEST_CASE("whole Llama: parameter gradients match finite differences, tied and untied") {
  for (bool tied : {true, false}) {
    const plan::Model m = tiny_llama(tied, tied);  // the tied one with qkv biases
    auto stage = make_llama_stage(m, stage_options(0, 4), cpu(), nullptr);
    const auto tokens = random_tokens(m, 2, 7);
    const double scale = 1.0 / (2 * m.sequence);
    const double loss = whole_model_step(*stage, tokens, scale);
    CHECK(loss * scale == doctest::Approx(std::log(32.0)).epsilon(0.02));  // untrained: ln V
    INFO("tied " << tied);
    const double worst = check_directional_gradients(*stage, tokens, scale, 1e-2);
    MESSAGE("Llama stage (tied " << tied << "): largest relative error of a directional "
            "derivative " << worst);
  }
}

TEST_CASE("two chained Llama stages give the same loss and gradients as one stage") {
  const plan::Model m = tiny_llama(false, true);
  check_chained_stages_equal_whole(m, [&](const StageModuleOptions& o) {
    return make_llama_stage(m, o, cpu(), nullptr);
  });
}

TEST_CASE("Llama recompute none, full and selective give bit-identical losses and gradients") {
  const plan::Model m = tiny_llama(false, true);
  check_recompute_modes_agree(m, [&](const StageModuleOptions& o) {
    return make_llama_stage(m, o, cpu(), nullptr);
  });
}

TEST_CASE("a tied head's stage holds a copy of the token table equal to the first stage's") {
  const plan::Model m = tiny_llama(true, false);
  auto first = make_llama_stage(m, stage_options(0, 2), cpu(), nullptr);
  auto head = make_llama_stage(m, stage_options(2, 4), cpu(), nullptr);
  const ParameterView table = first->parameters().front();
  const ParameterView copy = head->parameters().back();
  CHECK(table.name == "embedding.wte");
  CHECK(copy.name == "embedding.wte");
  CHECK(copy.layer == 3);
  CHECK(floats(copy.value) == floats(table.value));
}

TEST_CASE("Llama refusals name the field: kv_heads, family") {
  plan::Model m = tiny_llama(false, false);
  m.kv_heads = 3;
  CHECK_THROWS_WITH_AS(make_llama_stage(m, stage_options(0, 4), cpu(), nullptr),
                       doctest::Contains("kv_heads: a divisor of heads 4, got 3"), Error);
  m = tiny_llama(false, false);
  m.family = "bert";
  CHECK_THROWS_WITH_AS(make_stage_module(m, stage_options(0, 4), cpu(), nullptr),
                       doctest::Contains("family: a family whale-run trains (gpt or llama), got 'bert'"),
                       Error);
}

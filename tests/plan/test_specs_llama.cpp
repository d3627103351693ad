// File: test_specs_llama.cpp
// Llama-family models: exact parameter counts of the published Llama 2 and Llama 3 shapes, the
// 6N + attention FLOP identity, and the options real configs need (tied output, qkv biases,
// rotary positions) on the hand-checkable tiny-llama.
#include <doctest/doctest.h>

#include "test_specs_util.h"
#include "whale/plan/model.h"

using namespace whale::plan;
using whale::plan::testing::scratch_file;

TEST_CASE("llama: the published parameter counts from the Hugging Face shapes") {
  // Model cards on the Hugging Face Hub: Llama-2-7b 6.74B, Llama-2-70b 70B (68.98B by count),
  // Meta-Llama-3-8B 8.03B, Meta-Llama-3-70B 70.6B. Untied: V*h in the embedding and again in
  // the head; per block h(h + 2kv) + h^2 + 3hf + 2h; one final RMSNorm h.
  CHECK(load_model("configs/models/llama2-7b.yaml").parameter_count() == 6738415616.0);
  CHECK(load_model("configs/models/llama2-70b.yaml").parameter_count() == 68976648192.0);
  CHECK(load_model("configs/models/llama3-8b.yaml").parameter_count() == 8030261248.0);
  CHECK(load_model("configs/models/llama3-70b.yaml").parameter_count() == 70553706496.0);
}

TEST_CASE("llama: training FLOPs per token are 6N + 12 L h s over the matmul parameters") {
  // N counts the weights that multiply (no token table, no norms); 12 L h s is the attention
  // scores and context, forward and backward (Narayanan et al. 2021, appendix).
  for (const char* name : {"llama3-8b", "llama3-70b", "llama2-7b"}) {
    CAPTURE(name);
    const Model m = load_model(std::string("configs/models/") + name + ".yaml");
    const double h = m.hidden, L = m.num_layers, s = m.sequence, V = m.vocabulary;
    const double n_matmul = m.parameter_count() - V * h - (2 * L + 1) * h;
    CHECK(3 * m.forward_flops_per_sample() / s == 6 * n_matmul + 12 * L * h * s);
  }
  // Llama 3 8B at 8192 tokens: 6 * 7,504,658,432 + 12 * 32 * 4096 * 8192 per token.
  const Model m = load_model("configs/models/llama3-8b.yaml");
  CHECK(3 * m.forward_flops_per_sample() / 8192 == 45027950592.0 + 12884901888.0);
}

TEST_CASE("tiny-llama: grouped-query attention, qkv biases and a tied head by hand") {
  // h = 64, a = 4, kv_heads = 2 (K and V 32 wide), ffn = 176, V = 256, two blocks.
  const Model m = load_model("configs/models/tiny-llama.yaml");
  CHECK(m.kv_heads == 2);
  CHECK(m.tie_embeddings);
  CHECK(m.qkv_bias);
  CHECK(m.rope_theta == 10000);
  REQUIRE(m.layers.size() == 4);
  CHECK(m.layers[0].parameters == 256 * 64);
  // 64*128 + 64*64 + 3*64*176 + 2*64, plus biases 64 + 2*32.
  CHECK(m.layers[1].parameters == 8192 + 4096 + 33792 + 128 + 128);
  CHECK(m.layers[1].parameters_replicated == 128);
  CHECK(m.layers[3].parameters == 64);             // the final RMSNorm; the table is tied
  CHECK(m.layers[3].gemms.size() == 1);            // the LM head still multiplies
  CHECK(m.parameter_count() == 109120);
}

TEST_CASE("gpt with rope_theta has rotary positions and no position table") {
  const std::string base =
      "name: neox\nfamily: gpt\nlayers: 1\nhidden: 8\nheads: 2\nsequence: 4\nvocabulary: 16\n"
      "training: {global_batch: 4, precision: fp32}\n";
  const Model learned = load_model(scratch_file("gpt-learned.yaml", base));
  const Model rotary = load_model(scratch_file("gpt-rotary.yaml", base + "rope_theta: 10000\n"));
  CHECK(learned.layers[0].parameters == 16 * 8 + 4 * 8);
  CHECK(rotary.layers[0].parameters == 16 * 8);
  CHECK(rotary.layers[0].parameters_replicated == 0);
  const Model tied = load_model(scratch_file("gpt-tied.yaml", base + "tie_embeddings: true\n"));
  CHECK(learned.parameter_count() - tied.parameter_count() == 16 * 8);
  const std::string bias = scratch_file("gpt-bias.yaml", base + "qkv_bias: true\n");
  CHECK_SPEC_ERROR([&] { load_model(bias); }, bias, "qkv_bias", "qkv_bias applies to family llama only");
}

TEST_CASE("llama options survive save and load") {
  const Model original = load_model("configs/models/tiny-llama.yaml");
  const std::string saved = std::string(WHALE_BINARY_DIR) + "/specs-scratch/tiny-llama-saved.yaml";
  save_model(original, saved);
  const Model back = load_model(saved);
  CHECK(back.tie_embeddings);
  CHECK(back.qkv_bias);
  CHECK(back.rope_theta == 10000);
  CHECK(back.parameter_count() == original.parameter_count());
}

// File: test_specs_model.cpp
// Models: the layers generated for the tiny GPT checked by hand, the Megatron FLOP identity,
// llama and bert layers, listed models, the round trip and bad models.
#include <doctest/doctest.h>

#include <fstream>
#include <iterator>

#include "test_specs_util.h"
#include "whale/plan/model.h"

using namespace whale::plan;
using whale::plan::testing::scratch_file;

namespace {

Model family_model(const std::string& family, int layers, int hidden, int heads, int ffn, int seq, int vocab) {
  Model m;
  m.name = "m";
  m.family = family;
  m.num_layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.ffn_hidden = ffn;
  m.sequence = seq;
  m.vocabulary = vocab;
  return m;
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

}  // namespace

TEST_CASE("tiny: layers, flops, parameters and bytes by hand") {
  // s = 32, h = 64, a = 4, ffn = 256, V = 256, fp32 (4 bytes).
  const Model tiny = load_model("configs/models/tiny.yaml");
  CHECK(tiny.family == "gpt");
  CHECK(tiny.training.precision == Precision::fp32);
  CHECK(tiny.training.global_batch == 8);
  REQUIRE(tiny.layers.size() == 10);
  CHECK(tiny.layers[0].name == "embedding");
  CHECK(tiny.layers[0].kind == LayerKind::embedding);
  CHECK(tiny.layers[1].name == "block0");
  CHECK(tiny.layers[9].kind == LayerKind::head);

  const Layer& emb = tiny.layers[0];
  CHECK(emb.parameters == 256 * 64 + 32 * 64);  // 18432
  CHECK(emb.parameters_replicated == 32 * 64);
  CHECK(emb.forward_flops() == 0);
  CHECK(emb.output_bytes == 32 * 64 * 4);

  const Layer& block = tiny.layers[1];
  // 24 s h^2 + 4 s^2 h = 3,145,728 + 262,144.
  CHECK(block.forward_flops() == 3407872);
  // 4h^2 + 2h*ffn + 9h + ffn = 16384 + 32768 + 576 + 256.
  CHECK(block.parameters == 49984);
  CHECK(block.parameters_replicated == 6 * 64);
  // fp32: Korthikanti's 10sh is 8sh of 2-byte tensors (16sh at 4 bytes) and two 1-byte dropout
  // masks (2sh at any precision): 18sh = 36864.
  CHECK(block.activation_bytes_replicated == 18 * 32 * 64);
  CHECK(block.activation_bytes_split == (8 * 32 * 64 + 4 * 32 * 256) * 2);
  // fp32 attention: softmax output 4 + mask 1 + dropped-out probabilities 4 bytes per score,
  // 9as² = 36864 (a = 4, s = 32).
  CHECK(block.attention_score_elements == 4 * 32 * 32);
  CHECK(block.attention_rows == 4 * 32);
  CHECK(block.attention_dropout);
  CHECK(block.activation_bytes_attention == 9 * 4 * 32 * 32);
  CHECK(block.activation_bytes(1) == 36864 + 98304 + 36864);
  CHECK(block.activation_bytes(2) == 36864 + (98304 + 36864) / 2);
  CHECK(block.input_bytes == 8192);
  CHECK(block.output_bytes == 8192);
  CHECK(block.tp_allreduce_bytes == 2 * 8192);
  REQUIRE(block.gemms.size() == 6);
  CHECK(block.gemms[1].name == "attention_scores");
  CHECK(block.gemms[1].k == 16);
  CHECK(block.gemms[1].count == 4);

  const Layer& head = tiny.layers[9];
  CHECK(head.forward_flops() == 2.0 * 32 * 256 * 64);  // 1,048,576
  CHECK(head.parameters == 2 * 64 + 256 * 64);
  CHECK(head.activation_bytes_split == 4 * 32 * 256);

  CHECK(tiny.parameter_count() == 18432 + 8 * 49984 + 16512);        // 434,816
  CHECK(tiny.forward_flops_per_sample() == 8 * 3407872.0 + 1048576);  // 28,311,552
}

TEST_CASE("a gpt block's flops are 24 s h^2 + 4 s^2 h when ffn = 4h") {
  Model m = family_model("gpt", 2, 2048, 16, 8192, 2048, 51200);
  generate_layers(m, Precision::bf16);
  const double s = 2048, h = 2048;
  CHECK(m.layers[1].forward_flops() == 24 * s * h * h + 4 * s * s * h);
  // At 2 bytes the activation split is Korthikanti's 34 s h + 5 a s^2 in total.
  CHECK(m.layers[1].activation_bytes(1) == 34 * s * h + 5 * 16 * s * s);
  CHECK(m.layers[1].output_bytes == s * h * 2);
}

TEST_CASE("llama layers: SwiGLU, grouped-query attention, no biases") {
  // h = 64, a = 4, kv_heads = 2 (K and V are 32 wide), ffn = 128, s = 16, V = 100.
  Model m = family_model("llama", 1, 64, 4, 128, 16, 100);
  m.kv_heads = 2;
  generate_layers(m, Precision::bf16);
  REQUIRE(m.layers.size() == 3);
  const Layer& block = m.layers[1];
  CHECK(block.gemms.size() == 7);
  CHECK(block.gemms[0].n == 64 + 2 * 32);
  CHECK(block.parameters == 64 * 128 + 64 * 64 + 3 * 64 * 128 + 2 * 64);  // 36992
  CHECK(block.parameters_replicated == 128);
  CHECK(block.forward_flops() == 2.0 * 16 * (64 * 128 + 64 * 64 + 3 * 64 * 128) + 4.0 * 16 * 16 * 64);
  CHECK(m.layers[0].parameters == 100 * 64);  // no position table
  CHECK(m.layers[2].parameters == 64 + 100 * 64);
}

TEST_CASE("bert layers: token types and the MLM head") {
  Model m = family_model("bert", 1, 64, 4, 256, 16, 100);
  generate_layers(m, Precision::fp16);
  CHECK(m.layers[0].parameters == 100 * 64 + 16 * 64 + 2 * 64 + 2 * 64);
  CHECK(m.layers[2].parameters == 64 * 64 + 64 + 2 * 64 + 100 + 100 * 64);
  CHECK(m.layers[2].forward_flops() == 2.0 * 16 * 64 * 64 + 2.0 * 16 * 100 * 64);
  CHECK(m.layers[1].forward_flops() == 24.0 * 16 * 64 * 64 + 4.0 * 16 * 16 * 64);
}

TEST_CASE("precision scales the bytes of generated layers") {
  Model m = family_model("gpt", 1, 64, 4, 256, 32, 256);
  generate_layers(m, Precision::bf16);
  CHECK(m.layers[1].output_bytes == 32 * 64 * 2);
  CHECK(m.layers[1].activation_bytes_split == 8 * 32 * 64 + 4 * 32 * 256);
  generate_layers(m, Precision::tf32);
  CHECK(m.layers[1].output_bytes == 32 * 64 * 4);
  m.family = "rnn";
  CHECK_SPEC_ERROR([&] { generate_layers(m, Precision::fp32); }, "", "family", "cannot generate layers of family 'rnn'");
}

TEST_CASE("a listed model is read layer by layer") {
  const std::string path = scratch_file("listed.yaml",
      "name: two\nfamily: listed\nsequence: 10\ntraining: {global_batch: 4, precision: fp32}\n"
      "layer_list:\n"
      "  - name: a\n    kind: embedding\n    parameters: 100\n    output_bytes: 40\n"
      "  - name: b\n    parameters: 200\n    parameters_replicated: 20\n    output_bytes: 8\n"
      "    activation_bytes_split: 64\n"
      "    gemms: [{name: g, m: 10, n: 20, k: 30, count: 2}, {name: r, m: 1, n: 1, k: 1, tp_split: false}]\n"
      "    memory_ops: [{name: relu, bytes: 80, tp_split: true}]\n");
  const Model m = load_model(path);
  REQUIRE(m.layers.size() == 2);
  CHECK(m.sequence == 10);
  CHECK(m.layers[0].kind == LayerKind::embedding);
  CHECK(m.layers[1].kind == LayerKind::custom);
  CHECK(m.layers[1].forward_flops() == 2.0 * 10 * 20 * 30 * 2 + 2);
  CHECK(m.layers[1].activation_bytes(2) == 32);
  CHECK_FALSE(m.layers[1].gemms[1].tp_split);
  CHECK(m.layers[1].memory_ops[0].tp_split);
  CHECK(m.parameter_count() == 300);
  // Round trip.
  const std::string saved = std::string(WHALE_BINARY_DIR) + "/specs-scratch/listed-saved.yaml";
  save_model(m, saved);
  const Model back = load_model(saved);
  CHECK(back.forward_flops_per_sample() == m.forward_flops_per_sample());
  CHECK(back.layers[1].parameters_replicated == 20);
  const std::string again = std::string(WHALE_BINARY_DIR) + "/specs-scratch/listed-saved-again.yaml";
  save_model(back, again);
  CHECK(read(saved) == read(again));
}

TEST_CASE("a family model survives save and load") {
  const Model original = load_model("configs/models/llama2-70b.yaml");
  const std::string saved = std::string(WHALE_BINARY_DIR) + "/specs-scratch/llama-saved.yaml";
  save_model(original, saved);
  const Model back = load_model(saved);
  CHECK(back.kv_heads == 8);
  CHECK(back.ffn_hidden == 28672);
  CHECK(back.parameter_count() == original.parameter_count());
  CHECK(back.forward_flops_per_sample() == original.forward_flops_per_sample());
}

TEST_CASE("bad models name the field") {
  const std::string base =
      "name: toy\nfamily: gpt\nlayers: 2\nhidden: 8\nheads: 2\nsequence: 4\nvocabulary: 16\n"
      "training: {global_batch: 4, precision: fp32}\n";
  auto variant = [&](const std::string& from, const std::string& to) {
    std::string text = base;
    text.replace(text.find(from), from.size(), to);
    return scratch_file("bad-model.yaml", text);
  };
  std::string p = variant("heads: 2", "heads: 3");
  CHECK_SPEC_ERROR([&] { load_model(p); }, p, "heads", "expected heads to divide hidden (8)");
  p = variant("family: gpt", "family: rnn");
  CHECK_SPEC_ERROR([&] { load_model(p); }, p, "family", "unknown family 'rnn'");
  p = variant("family: gpt", "family: llama");
  CHECK_SPEC_ERROR([&] { load_model(p); }, p, "ffn_hidden", "missing field 'ffn_hidden'");
  p = variant("heads: 2", "heads: 2\nkv_heads: 1");
  CHECK_SPEC_ERROR([&] { load_model(p); }, p, "kv_heads", "kv_heads applies to family llama only");
  p = variant("precision: fp32", "precision: fp8");
  CHECK_SPEC_ERROR([&] { load_model(p); }, p, "training.precision", "unknown precision 'fp8'");
  p = variant("precision: fp32", "precision: fp32, optimizer: lion");
  CHECK_SPEC_ERROR([&] { load_model(p); }, p, "training.optimizer", "unknown optimizer 'lion'");
  p = variant("family: gpt", "family: listed");
  CHECK_SPEC_ERROR([&] { load_model(p); }, p, "layers", "layers applies to family models only");
}

TEST_CASE("a listed layer's mask and attention output bytes read back; negative ones fail naming the field") {
  const std::string head = "name: masks\nfamily: listed\nsequence: 10\ntraining: {global_batch: 4, precision: fp32}\n"
                           "layer_list:\n  - name: a\n    parameters: 100\n    output_bytes: 40\n"
                           "    activation_bytes_replicated: 30\n";
  const std::string path =
      scratch_file("listed-masks.yaml", head + "    dropout_mask_bytes: 20\n    attention_output_bytes: 12\n");
  const Model m = load_model(path);
  CHECK(m.layers[0].dropout_mask_bytes == 20);
  CHECK(m.layers[0].attention_output_bytes == 12);
  const std::string saved = std::string(WHALE_BINARY_DIR) + "/specs-scratch/listed-masks-saved.yaml";
  save_model(m, saved);
  CHECK(load_model(saved).layers[0].dropout_mask_bytes == 20);
  CHECK(load_model(saved).layers[0].attention_output_bytes == 12);
  for (const char* field : {"dropout_mask_bytes", "attention_output_bytes"}) {
    const std::string bad = scratch_file("listed-masks-bad.yaml", head + "    " + field + ": -1\n");
    CHECK_SPEC_ERROR([&] { load_model(bad); }, bad, std::string("layer_list[0].") + field,
                     "expected a number >= 0, got '-1'");
  }
}

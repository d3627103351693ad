// File: test_specs_head_dim.cpp
// Attention wider than the hidden size: a block's parameters, FLOPs and activation bytes with a
// head_dim other than hidden / heads, by hand, and the YAML and Hugging Face readers of it.
#include <doctest/doctest.h>

#include "test_specs_util.h"
#include "whale/plan/model.h"

using namespace whale::plan;
using whale::plan::testing::scratch_file;

namespace {

// One block of h = 8, two heads, s = 4 tokens, V = 16, fp32 (4 bytes per element).
const std::string kShape = "layers: 1\nhidden: 8\nheads: 2\nsequence: 4\nvocabulary: 16\n"
                           "training: {global_batch: 4, precision: fp32}\n";

Model load_text(const std::string& name, const std::string& text) { return load_model(scratch_file(name, text)); }

}  // namespace

TEST_CASE("llama block with heads of width 8 on a hidden size of 8 (attention width 16), by hand") {
  const Model m = load_text("llama-wide-heads.yaml", "name: wide\nfamily: llama\nffn_hidden: 12\nkv_heads: 1\n"
                                                     "head_dim: 8\n" + kShape);
  CHECK(m.head_dim == 8);
  CHECK(m.attention_head_dim() == 8);
  const Layer& block = m.layers.at(1);
  // q = 2 x 8 = 16, k = v = 1 x 8 = 8, h = 8, f = 12. Weights: qkv 8 x (16 + 8 + 8) = 256,
  // out 16 x 8 = 128, gate/up/down 3 x 8 x 12 = 288, two RMSNorms 2 x 8 = 16: 688.
  CHECK(block.parameters == 688);
  CHECK(block.parameters_replicated == 16);
  // Forward FLOPs 2mnk: qkv 2*4*32*8 = 2048; scores 2 heads x 2*4*4*8 = 512; context 512;
  // out 2*4*8*16 = 1024; gate, up, down 2*4*12*8 = 768 each: 6400.
  CHECK(block.forward_flops() == 6400);
  // The GEMMs' shapes: the attention core at head width 8, the output projection 16 -> 8.
  CHECK(block.gemms.at(0).n == 32);
  CHECK(block.gemms.at(1).k == 8);
  CHECK(block.gemms.at(2).n == 8);
  CHECK(block.gemms.at(3).n == 8);
  CHECK(block.gemms.at(3).k == 16);
  // Kept for the backward, split across tp: q, k, v s(16 + 8 + 8) + out input s x 16 + gate, up
  // outputs and down input 3 s x 12 = 4 x 84 elements x 4 bytes = 1344; replicated: norm inputs
  // and the qkv and gate/up inputs 4sh x 4 bytes = 512. The tp all-reduces stay at h: 2sh x 4.
  CHECK(block.activation_bytes_split == 1344);
  CHECK(block.activation_bytes_replicated == 512);
  CHECK(block.tp_allreduce_bytes == 256);
  // Rotary on q and k: read and write s(16 + 8) elements.
  bool rotary_seen = false;
  for (const MemoryOp& op : block.memory_ops) {
    if (op.name != "rotary") continue;
    rotary_seen = true;
    CHECK(op.bytes == 2 * 4 * 24 * 4);
  }
  CHECK(rotary_seen);
}

TEST_CASE("gpt block with heads of width 8 on a hidden size of 8 (attention width 16), by hand") {
  const Model m = load_text("gpt-wide-heads.yaml", "name: wide\nfamily: gpt\nhead_dim: 8\n" + kShape);
  const Layer& block = m.layers.at(1);
  // q = 16, h = 8, f = 4h = 32. Weights: qkv 8 x 48 = 384, proj 16 x 8 = 128, fc1 + fc2
  // 2 x 8 x 32 = 512; biases qkv 48 + proj 8 + fc1 32 + fc2 8; two layernorms 4 x 8 = 32: 1152.
  CHECK(block.parameters == 1152);
  // qkv 2*4*48*8 = 3072; scores and context 512 each; proj 2*4*8*16 = 1024; fc1 and fc2
  // 2*4*32*8 = 2048 each: 9216.
  CHECK(block.forward_flops() == 9216);
  // Korthikanti's split terms at 2 bytes, 8sq + 4sf = 8*4*16 + 4*4*32 = 1024, at 4 bytes: 2048.
  CHECK(block.activation_bytes_split == 2048);
}

TEST_CASE("head_dim equal to hidden / heads is the default, and survives save and load") {
  const std::string base = "name: plain\nfamily: llama\nffn_hidden: 12\nkv_heads: 1\n" + kShape;
  const Model plain = load_text("llama-plain.yaml", base);
  const Model explicit_width = load_text("llama-head-dim-4.yaml", base + "head_dim: 4\n");
  CHECK(plain.head_dim == 0);
  CHECK(plain.attention_head_dim() == 4);
  CHECK(explicit_width.parameter_count() == plain.parameter_count());
  CHECK(explicit_width.forward_flops_per_sample() == plain.forward_flops_per_sample());

  const Model wide = load_text("llama-wide-saved-from.yaml", base + "head_dim: 8\n");
  const std::string saved = std::string(WHALE_BINARY_DIR) + "/specs-scratch/llama-wide-saved.yaml";
  save_model(wide, saved);
  const Model back = load_model(saved);
  CHECK(back.head_dim == 8);
  CHECK(back.parameter_count() == wide.parameter_count());
}

TEST_CASE("head_dim frees heads from dividing hidden; without it they must") {
  const std::string shape = "name: odd\nfamily: llama\nlayers: 1\nhidden: 10\nheads: 4\nffn_hidden: 12\n"
                            "sequence: 4\nvocabulary: 16\ntraining: {global_batch: 4, precision: fp32}\n";
  const std::string odd = scratch_file("llama-heads-odd.yaml", shape);
  CHECK_SPEC_ERROR([&] { load_model(odd); }, odd, "heads", "expected heads to divide hidden (10)");
  const Model m = load_text("llama-heads-odd-dim.yaml", shape + "head_dim: 3\n");
  // q = k = v = 12 wide: qkv 10 x 36 + out 12 x 10 + 3 x 10 x 12 + 2 x 10 = 860.
  CHECK(m.layers.at(1).parameters == 860);
}

TEST_CASE("a Hugging Face config's head_dim other than hidden_size / heads is the head width") {
  const std::string config =
      R"({"model_type": "llama", "hidden_size": 8, "intermediate_size": 12, "num_hidden_layers": 1,
          "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 8, "vocab_size": 16,
          "max_position_embeddings": 4, "torch_dtype": "float32"})";
  const Model hf = load_model(scratch_file("hf-wide-heads-config.json", config));
  CHECK(hf.head_dim == 8);
  const Model yaml = load_text("llama-wide-heads-twin.yaml", "name: wide\nfamily: llama\nffn_hidden: 12\n"
                                                             "kv_heads: 1\nhead_dim: 8\n" + kShape);
  CHECK(hf.layers.at(1).parameters == yaml.layers.at(1).parameters);
  CHECK(hf.layers.at(1).forward_flops() == yaml.layers.at(1).forward_flops());
  // Equal to hidden_size / heads it is the default, left unset.
  std::string plain = config;
  plain.replace(plain.find("\"head_dim\": 8"), 13, "\"head_dim\": 4");
  CHECK(load_model(scratch_file("hf-plain-heads-config.json", plain)).head_dim == 0);
}

TEST_CASE("Qwen3-235B-A22B's config.json loads with heads of width 128, equal to its YAML twin") {
  Model hf = load_model("configs/models/hf/qwen3-235b-a22b-config.json");
  CHECK(hf.head_dim == 128);
  CHECK(hf.hidden == 4096);
  CHECK(hf.heads * hf.head_dim == 8192);
  REQUIRE(hf.moe);
  CHECK(hf.moe->experts == 128);
  CHECK(hf.moe->top_k == 8);
  set_sequence(hf, 4096, hf.training.precision, "--sequence");
  const Model yaml = load_model("configs/validation/megatron-moe-qwen3-2025/qwen3-235b-a22b.yaml");
  // 235,093,610,496: tests/sim/test_validation_moe_qwen3.cpp counts it by hand.
  CHECK(hf.parameter_count() == 235093610496.0);
  CHECK(yaml.parameter_count() == hf.parameter_count());
  CHECK(yaml.forward_flops_per_sample() == hf.forward_flops_per_sample());
}

TEST_CASE("an attention width heads x head_dim beyond whale's dimension limit is one error naming head_dim") {
  // 64 x 524288 = 33,554,432 > 16,777,216 (docs/limits.md).
  const std::string yaml = scratch_file("llama-head-dim-huge.yaml", "name: huge\nfamily: llama\nlayers: 1\n"
                                        "hidden: 8\nheads: 64\nhead_dim: 524288\nffn_hidden: 12\nsequence: 4\n"
                                        "vocabulary: 16\ntraining: {global_batch: 4, precision: fp32}\n");
  CHECK_SPEC_ERROR([&] { load_model(yaml); }, yaml, "head_dim", "expected heads x head_dim at most 16777216, got 33554432");
  const std::string hf = scratch_file("hf-head-dim-huge-config.json",
      R"({"model_type": "llama", "hidden_size": 8, "intermediate_size": 12, "num_hidden_layers": 1,
          "num_attention_heads": 64, "head_dim": 524288, "vocab_size": 16, "max_position_embeddings": 4})");
  CHECK_SPEC_ERROR([&] { load_model(hf); }, hf, "head_dim", "num_attention_heads x head_dim at most 16777216, got 33554432");
}

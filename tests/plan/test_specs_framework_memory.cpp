// File: test_specs_framework_memory.cpp
// The profile's framework_memory block (attention implementation, the older fused_attention
// flag, fp32_gradient_copy, stage_buffer_cache, dropout_masks_kept, and how ZeRO holds gradients and
// master weights) and the models' dropout (model YAML and config.json): loaded
// values, defaults, save/load and bad values.
#include <doctest/doctest.h>

#include <filesystem>

#include "test_specs_util.h"
#include "whale/plan/device_profile.h"
#include "whale/plan/model.h"

using namespace whale::plan;
using whale::plan::testing::kCoreProfile;
using whale::plan::testing::read_text;
using whale::plan::testing::scratch_file;

namespace {
DeviceProfile profile_with(const std::string& name, const std::string& block) {
  return load_device_profile(scratch_file("framework-memory/" + name + "/core.yaml",
                                          kCoreProfile + "framework_memory: {source: test" + block + "}\n"));
}

// A framework_memory flag whose default is `cpu_default` on a cpu profile and the opposite on a
// gpu one: read from the block, written only where it differs from the kind's default.
void check_kind_default_flag(const std::string& key, bool FrameworkMemory::*flag, bool cpu_default) {
  CAPTURE(key);
  CHECK(profile_with("none", "").framework_memory.*flag == cpu_default);  // kCoreProfile: kind cpu
  CHECK(default_framework_memory("gpu").*flag == !cpu_default);
  DeviceProfile other = profile_with(key, ", " + key + ": " + (cpu_default ? "false" : "true"));
  CHECK(other.framework_memory.*flag == !cpu_default);
  const std::string folder = std::string(WHALE_BINARY_DIR) + "/specs-scratch/framework-memory/" + key + "-saved";
  std::filesystem::create_directories(folder);
  save_device_profile(other, folder + "/core.yaml");  // differs from the cpu default: written
  CHECK(load_device_profile(folder + "/core.yaml").framework_memory.*flag == !cpu_default);
  other.kind = "gpu";  // the gpu default: not written, read back as it
  save_device_profile(other, folder + "/core.yaml");
  CHECK(read_text(folder + "/core.yaml").find(key) == std::string::npos);
  CHECK(load_device_profile(folder + "/core.yaml").framework_memory.*flag == !cpu_default);
}
}  // namespace

TEST_CASE("framework_memory names its attention implementation; fused_attention still reads") {
  CHECK(profile_with("eager", ", attention_implementation: eager").framework_memory.attention ==
        AttentionImplementation::eager);
  CHECK(profile_with("sdpa", ", attention_implementation: sdpa").framework_memory.attention ==
        AttentionImplementation::flash);
  CHECK(profile_with("none", "").framework_memory.attention == AttentionImplementation::fused_softmax);
  CHECK(profile_with("fused-true", ", fused_attention: true").framework_memory.attention ==
        AttentionImplementation::flash);
  CHECK(profile_with("fused-false", ", fused_attention: false").framework_memory.attention ==
        AttentionImplementation::fused_softmax);
  CHECK_FALSE(profile_with("none", "").framework_memory.fp32_gradient_copy);
  CHECK(profile_with("copy", ", fp32_gradient_copy: true").framework_memory.fp32_gradient_copy);
}

TEST_CASE("framework_memory's attention implementation survives save and load") {
  DeviceProfile p = profile_with("save", ", attention_implementation: flash, fp32_gradient_copy: true");
  const std::string folder = std::string(WHALE_BINARY_DIR) + "/specs-scratch/framework-memory/saved";
  std::filesystem::create_directories(folder);
  save_device_profile(p, folder + "/core.yaml");
  const DeviceProfile back = load_device_profile(folder + "/core.yaml");
  CHECK(back.framework_memory == p.framework_memory);
  CHECK(back.framework_memory.attention == AttentionImplementation::flash);
}

TEST_CASE("a bad attention implementation fails naming the field") {
  const std::string bad = scratch_file("framework-memory/bad/core.yaml",
                                       kCoreProfile + "framework_memory: {source: x, attention_implementation: xformers}\n");
  CHECK_SPEC_ERROR([&] { load_device_profile(bad); }, bad, "framework_memory.attention_implementation",
                   "eager, fused_softmax or flash, got 'xformers'");
  const std::string both = scratch_file("framework-memory/both/core.yaml",
      kCoreProfile + "framework_memory: {source: x, attention_implementation: eager, fused_attention: true}\n");
  CHECK_SPEC_ERROR([&] { load_device_profile(both); }, both, "framework_memory.fused_attention",
                   "either attention_implementation or fused_attention");
}

TEST_CASE("framework_memory's cross entropy and freed gradients: values, defaults, save and load") {
  const DeviceProfile none = profile_with("none", "");
  CHECK(none.framework_memory.cross_entropy == CrossEntropyImplementation::fused);
  CHECK_FALSE(none.framework_memory.gradients_freed_after_step);
  DeviceProfile p = profile_with("torch", ", cross_entropy_implementation: pytorch, gradients_freed_after_step: true");
  CHECK(p.framework_memory.cross_entropy == CrossEntropyImplementation::pytorch);
  CHECK(p.framework_memory.gradients_freed_after_step);
  const std::string folder = std::string(WHALE_BINARY_DIR) + "/specs-scratch/framework-memory/torch-saved";
  std::filesystem::create_directories(folder);
  save_device_profile(p, folder + "/core.yaml");
  CHECK(load_device_profile(folder + "/core.yaml").framework_memory == p.framework_memory);
  const std::string bad = scratch_file("framework-memory/bad-loss/core.yaml",
                                       kCoreProfile + "framework_memory: {source: x, cross_entropy_implementation: apex}\n");
  CHECK_SPEC_ERROR([&] { load_device_profile(bad); }, bad, "framework_memory.cross_entropy_implementation",
                   "fused or pytorch, got 'apex'");
}

TEST_CASE("a model's dropout: YAML fields, config.json keys and the families' defaults") {
  const std::string base = "name: m\nfamily: gpt\nlayers: 1\nhidden: 64\nheads: 4\nsequence: 32\n"
                           "vocabulary: 256\ntraining: {global_batch: 8, precision: bf16}\n";
  const Model plain = load_model(scratch_file("dropout/plain.yaml", base));
  CHECK_FALSE(plain.attention_dropout.has_value());
  CHECK(plain.layers[1].attention_dropout);  // gpt's default 0.1
  const Model off = load_model(scratch_file("dropout/off.yaml", base + "attention_dropout: 0\nhidden_dropout: 0\n"));
  CHECK(*off.attention_dropout == 0.0);
  CHECK_FALSE(off.layers[1].attention_dropout);
  CHECK(off.layers[1].activation_bytes_replicated == 8 * 32 * 64);
  const std::string high = scratch_file("dropout/high.yaml", base + "attention_dropout: 1\n");
  CHECK_SPEC_ERROR([&] { load_model(high); }, high, "attention_dropout", "[0, 1)");
  const std::string llama = scratch_file("dropout/llama.yaml",
      "name: m\nfamily: llama\nlayers: 1\nhidden: 64\nheads: 4\nffn_hidden: 128\nsequence: 32\n"
      "vocabulary: 256\ntraining: {global_batch: 8, precision: bf16}\nhidden_dropout: 0.1\n");
  CHECK_SPEC_ERROR([&] { load_model(llama); }, llama, "hidden_dropout", "families gpt and bert only");
  // GPT-2's attn_pdrop and resid_pdrop; GPT-NeoX without dropout keys keeps none.
  const Model gpt2 = load_model(scratch_file("dropout/gpt2/config.json",
      R"({"model_type": "gpt2", "n_embd": 64, "n_layer": 1, "n_head": 4, "n_positions": 32,
          "vocab_size": 256, "attn_pdrop": 0.0, "resid_pdrop": 0.1})"));
  CHECK(*gpt2.attention_dropout == 0.0);
  CHECK(*gpt2.hidden_dropout == 0.1);
  CHECK_FALSE(gpt2.layers[1].attention_dropout);
  CHECK(gpt2.layers[1].activation_bytes_replicated == 10 * 32 * 64);
  const Model neox = load_model(scratch_file("dropout/neox/config.json",
      R"({"model_type": "gpt_neox", "hidden_size": 64, "num_hidden_layers": 1,
          "num_attention_heads": 4, "intermediate_size": 256, "max_position_embeddings": 32,
          "vocab_size": 256})"));
  CHECK_FALSE(neox.layers[1].attention_dropout);
  CHECK(neox.layers[0].activation_bytes_replicated == 0);
  // A model saved with its dropout loads with it.
  const std::string folder = std::string(WHALE_BINARY_DIR) + "/specs-scratch/dropout/saved";
  std::filesystem::create_directories(folder);
  save_model(off, folder + "/m.yaml");
  CHECK(*load_model(folder + "/m.yaml").hidden_dropout == 0.0);
}

TEST_CASE("stage_buffer_cache: on by default for a cpu profile, off for a gpu one; save and load") {
  check_kind_default_flag("stage_buffer_cache", &FrameworkMemory::stage_buffer_cache, true);
}

TEST_CASE("dropout_masks_kept: off by default for a cpu profile, on for a gpu one; save and load") {
  check_kind_default_flag("dropout_masks_kept", &FrameworkMemory::dropout_masks_kept, false);
}

TEST_CASE("sharded_gradients_held_whole and master_weights_held_whole: on for a cpu profile, off for a gpu one; save and load") {
  check_kind_default_flag("sharded_gradients_held_whole", &FrameworkMemory::sharded_gradients_held_whole, true);
  check_kind_default_flag("master_weights_held_whole", &FrameworkMemory::master_weights_held_whole, true);
}

TEST_CASE("a dropout_masks_kept that is not a boolean fails naming the field") {
  const std::string bad = scratch_file("framework-memory/masks-bad/core.yaml",
                                       kCoreProfile + "framework_memory: {source: x, dropout_masks_kept: sometimes}\n");
  CHECK_SPEC_ERROR([&] { load_device_profile(bad); }, bad, "framework_memory.dropout_masks_kept", "true or false");
}

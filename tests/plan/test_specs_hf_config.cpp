// File: test_specs_hf_config.cpp
// Hugging Face config.json as a model: the shipped Llama 3 configs equal whale's YAML, GPT-2,
// GPT-NeoX (Pythia) and Qwen2 give their published parameter counts, and unsupported fields
// fail naming the file and the field.
#include <doctest/doctest.h>

#include "test_specs_util.h"
#include "whale/plan/model.h"

using namespace whale::plan;
using whale::plan::testing::scratch_file;

TEST_CASE("the shipped Llama 3 config.json files equal whale's llama3 YAML") {
  for (const char* size : {"8b", "70b"}) {
    CAPTURE(size);
    const Model hf = load_model(std::string("configs/models/hf/llama3-") + size + "-config.json");
    const Model yaml = load_model(std::string("configs/models/llama3-") + size + ".yaml");
    CHECK(hf.family == "llama");
    CHECK(hf.name == std::string("llama3-") + size + "-config");
    CHECK(hf.kv_heads == 8);
    CHECK(hf.rope_theta == 500000);
    CHECK_FALSE(hf.tie_embeddings);
    CHECK_FALSE(hf.qkv_bias);
    CHECK(hf.sequence == 8192);
    CHECK(hf.training.precision == Precision::bf16);
    CHECK(hf.training.global_batch == 512);  // 4,194,304 tokens / 8192
    CHECK(hf.parameter_count() == yaml.parameter_count());
    CHECK(hf.forward_flops_per_sample() == yaml.forward_flops_per_sample());
  }
}

TEST_CASE("GPT-2, GPT-NeoX and Qwen2 configs give the published parameter counts") {
  // openai-community/gpt2: 124,439,808 parameters with the tied head.
  const Model gpt2 = load_model(scratch_file("gpt2/config.json",
      R"({"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12, "n_positions": 1024,
          "n_ctx": 1024, "n_inner": null, "vocab_size": 50257, "activation_function": "gelu_new"})"));
  CHECK(gpt2.family == "gpt");
  CHECK(gpt2.tie_embeddings);
  CHECK(gpt2.parameter_count() == 124439808);
  CHECK(gpt2.training.global_batch == 4096);
  // EleutherAI/pythia-160m: rotary on 25% of each head, untied: 162,322,944 parameters.
  const Model pythia = load_model(scratch_file("pythia/config.json",
      R"({"model_type": "gpt_neox", "hidden_size": 768, "num_hidden_layers": 12,
          "num_attention_heads": 12, "intermediate_size": 3072, "max_position_embeddings": 2048,
          "rotary_pct": 0.25, "rotary_emb_base": 10000, "tie_word_embeddings": false,
          "use_parallel_residual": true, "vocab_size": 50304, "torch_dtype": "float16"})"));
  CHECK(pythia.parameter_count() == 162322944);
  CHECK(pythia.training.precision == Precision::fp16);
  CHECK(pythia.rope_theta == 10000);
  // Qwen/Qwen2-0.5B: qkv biases, tied, 2 key/value heads: 494,032,768 parameters. Its sliding
  // window is switched off (use_sliding_window false).
  const Model qwen = load_model(scratch_file("qwen2/config.json",
      R"({"model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864,
          "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2,
          "max_position_embeddings": 131072, "sliding_window": 131072, "use_sliding_window": false,
          "rope_theta": 1000000.0, "tie_word_embeddings": true, "vocab_size": 151936,
          "torch_dtype": "bfloat16"})"));
  CHECK(qwen.qkv_bias);
  CHECK(qwen.parameter_count() == 494032768);
}

TEST_CASE("unsupported config.json fields fail naming the file and the field") {
  // Experts on a dense model type (Mixtral's own type reads them: docs/moe.md).
  const std::string experts = scratch_file("llama-experts/config.json",
      R"({"model_type": "llama", "hidden_size": 4096, "num_local_experts": 8,
          "num_experts_per_tok": 2})");
  CHECK_SPEC_ERROR([&] { load_model(experts); }, experts, "num_local_experts",
                   "mixture-of-experts field 'num_local_experts' is not supported");
  const std::string mixtral = scratch_file("mixtral/config.json",
      R"({"model_type": "mixtral", "hidden_size": 4096, "num_local_experts": 8,
          "num_experts_per_tok": 2})");
  CHECK_SPEC_ERROR([&] { load_model(mixtral); }, mixtral, "intermediate_size", "missing field");
  const std::string t5 = scratch_file("t5/config.json", R"({"model_type": "t5", "d_model": 512})");
  CHECK_SPEC_ERROR([&] { load_model(t5); }, t5, "model_type", "got 't5'");
  const std::string bare = scratch_file("bare/config.json", R"({"hidden_size": 64})");
  CHECK_SPEC_ERROR([&] { load_model(bare); }, bare, "", "a Hugging Face config.json with a model_type");
  const std::string missing = scratch_file("missing/config.json",
      R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2})");
  CHECK_SPEC_ERROR([&] { load_model(missing); }, missing, "intermediate_size", "missing field 'intermediate_size'");
}

TEST_CASE("a sliding window bounds the training sequence, and the default batch follows the sequence") {
  // mistralai/Mistral-7B-v0.1: a 4096-token window within 32,768 positions. Within its window
  // the attention is full attention: the model trains at 4096 tokens by default, 4M tokens a
  // batch (1024 samples).
  const std::string mistral = scratch_file("mistral/config.json",
      R"({"model_type": "mistral", "hidden_size": 4096, "intermediate_size": 14336,
          "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
          "max_position_embeddings": 32768, "sliding_window": 4096, "vocab_size": 32000})");
  Model model = load_model(mistral);
  CHECK(model.sliding_window == 4096);
  CHECK(model.sequence == 4096);
  CHECK(model.training.global_batch == 1024);
  // A shorter sequence keeps 4M tokens a batch; a longer one than the window is refused.
  set_sequence(model, 2048, model.training.precision, "--sequence");
  CHECK(model.sequence == 2048);
  CHECK(model.training.global_batch == 2048);
  CHECK_SPEC_ERROR([&] { set_sequence(model, 8192, model.training.precision, "--sequence"); }, "", "--sequence",
                   "a sequence of at most the sliding window of 'config' (4096 tokens), got 8192");
  CHECK(model.sequence == 2048);
  // No window (Mistral v0.3: null): max_position_embeddings, and --sequence sets the batch too.
  Model v03 = load_model(scratch_file("mistral-v03/config.json",
      R"({"model_type": "mistral", "hidden_size": 4096, "intermediate_size": 14336,
          "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
          "max_position_embeddings": 32768, "sliding_window": null, "vocab_size": 32768})"));
  CHECK(v03.sliding_window == 0);
  CHECK(v03.sequence == 32768);
  CHECK(v03.training.global_batch == 128);
  set_sequence(v03, 4096, v03.training.precision, "--sequence");
  CHECK(v03.training.global_batch == 1024);
  // A whale model YAML's batch is the number of samples it gives, whatever the sequence.
  Model yaml = load_model(testing::source_path("configs/models/gpt3-1.3b.yaml"));
  const int samples = yaml.training.global_batch;
  set_sequence(yaml, yaml.sequence / 2, yaml.training.precision, "--sequence");
  CHECK(yaml.training.global_batch == samples);
}

TEST_CASE("a config.json key given twice keeps its last value, as Python's json does") {
  const Model model = load_model(scratch_file("twice/config.json",
      R"({"model_type": "llama", "hidden_size": 32, "intermediate_size": 176, "num_attention_heads": 4,
          "num_hidden_layers": 2, "max_position_embeddings": 32, "vocab_size": 256, "hidden_size": 64,
          "rope_scaling": {"factor": 2, "factor": 8}})"));
  CHECK(model.hidden == 64);
  CHECK(model.heads == 4);
}

TEST_CASE("config.json numbers outside their range fail naming the field and the limit") {
  const std::string base = R"("model_type": "llama", "intermediate_size": 176, "num_attention_heads": 4,
      "max_position_embeddings": 32, "vocab_size": 256)";
  const std::string hidden = scratch_file("hidden/config.json",
      "{" + base + R"(, "hidden_size": 1099511627776, "num_hidden_layers": 2})");
  CHECK_SPEC_ERROR([&] { load_model(hidden); }, hidden, "hidden_size",
                   "expected at most 16777216 units of a model dimension, got '1099511627776'");
  const std::string layers = scratch_file("layers/config.json",
      "{" + base + R"(, "hidden_size": 64, "num_hidden_layers": 2000000000})");
  CHECK_SPEC_ERROR([&] { load_model(layers); }, layers, "num_hidden_layers",
                   "expected at most 1024 layers, got '2000000000'");
  const std::string heads = scratch_file("heads/config.json",
      "{" + base + R"(, "hidden_size": 66, "num_hidden_layers": 2})");
  CHECK_SPEC_ERROR([&] { load_model(heads); }, heads, "num_attention_heads",
                   "expected num_attention_heads to divide hidden_size (66), got 4");
  const std::string rotary = scratch_file("rotary/config.json",
      R"({"model_type": "gpt_neox", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
          "intermediate_size": 256, "max_position_embeddings": 32, "rotary_pct": 2.0, "vocab_size": 256})");
  CHECK_SPEC_ERROR([&] { load_model(rotary); }, rotary, "rotary_pct", "expected a number in (0, 1], got '2.0'");
  const std::string gpt2 = scratch_file("gpt2heads/config.json",
      R"({"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 3, "n_positions": 32, "vocab_size": 256})");
  CHECK_SPEC_ERROR([&] { load_model(gpt2); }, gpt2, "n_head", "expected n_head to divide n_embd (64), got 3");
}

TEST_CASE("a config.json number in quotes fails at its key") {
  const std::string base = R"("model_type": "llama", "intermediate_size": 176, "num_attention_heads": 4,
      "max_position_embeddings": 32, "vocab_size": 256, "num_hidden_layers": 2)";
  const std::string quoted = scratch_file("quoted/config.json", "{" + base + R"(, "hidden_size": "64"})");
  CHECK_SPEC_ERROR([&] { load_model(quoted); }, quoted, "hidden_size", "expected a JSON number, got the string \"64\"");
  const std::string dropout = scratch_file("quoted-dropout/config.json",
      "{" + base + R"(, "hidden_size": 64, "attention_dropout": "0.1"})");
  CHECK_SPEC_ERROR([&] { load_model(dropout); }, dropout, "attention_dropout",
                   "expected a JSON number, got the string \"0.1\"");
  const Model plain = load_model(scratch_file("plain/config.json", "{" + base + R"(, "hidden_size": 64})"));
  CHECK(plain.hidden == 64);
}

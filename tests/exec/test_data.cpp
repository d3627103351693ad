// File: test_data.cpp
// The byte-level tokenizer, the binary token file and the DataLoader: exact tokens, the file
// layout, deterministic sampling, replica shares, and every bad-input message.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>

#include "whale/exec/runtime/data_file.h"
#include "whale/exec/runtime/data_loader.h"
#include "whale/exec/runtime/tokenizer.h"
#include "whale/plan/error.h"

using namespace whale::exec;

namespace {

/// A scratch file in the build folder (tests write nowhere else).
std::string temp_path(const std::string& name) {
  const std::string dir = std::string(WHALE_BINARY_DIR) + "/tests/scratch";
  std::system(("mkdir -p " + dir).c_str());
  return dir + "/data_" + name;
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const whale::Error& e) {
    return e.what();
  }
  return "no error";
}

whale::plan::Plan plan_with(int sequence, int vocabulary, int micro_batch_size) {
  whale::plan::Plan plan;
  plan.model.sequence = sequence;
  plan.model.vocabulary = vocabulary;
  plan.micro_batch_size = micro_batch_size;
  plan.micro_batches = 2;
  return plan;
}

TokenData counting_tokens(int count) {
  TokenData data;
  data.source_file = "counting";
  data.vocabulary = 256;
  for (int i = 0; i < count; ++i) data.tokens.push_back(static_cast<uint16_t>(i % 256));
  return data;
}

}  // namespace

TEST_CASE("the byte tokenizer maps each byte to its value and back") {
  CHECK(tokenize_bytes("Hi!\n") == std::vector<uint16_t>{72, 105, 33, 10});
  CHECK(tokenize_bytes("\xff") == std::vector<uint16_t>{255});
  CHECK(detokenize_bytes({72, 105}) == "Hi");
  CHECK_THROWS_AS(detokenize_bytes({256}), std::out_of_range);
}

TEST_CASE("a token file has a 24-byte header then uint16 tokens, and reads back") {
  TokenData data;
  data.vocabulary = 300;
  data.tokens = {1, 299, 256};
  const std::string path = temp_path("tokens.bin");
  write_token_file(data, path);
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(bytes.size() == 24 + 2 * 3);
  CHECK(bytes.substr(0, 8) == "WHALETOK");
  CHECK(static_cast<unsigned char>(bytes[8]) == 1);     // version
  CHECK(static_cast<unsigned char>(bytes[12]) == 44);   // 300 = 0x012c
  CHECK(static_cast<unsigned char>(bytes[13]) == 1);
  CHECK(static_cast<unsigned char>(bytes[16]) == 3);    // count
  CHECK(static_cast<unsigned char>(bytes[26]) == 43);   // 299 = 0x012b
  const TokenData back = load_tokens(path);
  CHECK(back.vocabulary == 300);
  CHECK(back.tokens == data.tokens);
}

TEST_CASE("a text file is tokenised byte by byte with vocabulary 256") {
  const std::string path = temp_path("text.txt");
  write_bytes(path, "abc");
  const TokenData data = load_tokens(path);
  CHECK(data.vocabulary == 256);
  CHECK(data.tokens == std::vector<uint16_t>{97, 98, 99});
}

TEST_CASE("bad token files name the file and the field") {
  const std::string path = temp_path("bad.bin");
  TokenData data;
  data.vocabulary = 10;
  data.tokens = {1, 2, 3};
  write_token_file(data, path);
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  write_bytes(path, bytes.substr(0, bytes.size() - 1));
  CHECK(error_of([&] { read_token_file(path); }).find(path + ": header.tokens: 3 tokens") == 0);
  bytes[26] = 12;  // token 1 becomes 12 >= vocabulary 10
  write_bytes(path, bytes);
  CHECK(error_of([&] { read_token_file(path); }) ==
        path + ": tokens[1]: a token below the vocabulary 10, got 12");
  write_bytes(path, "plain text");
  CHECK(error_of([&] { read_token_file(path); }).find(path + ": header: a whale token file") == 0);
  CHECK(error_of([&] { load_tokens(temp_path("missing")); })
            .find(temp_path("missing") + ": a readable file") == 0);
}

TEST_CASE("the loader rejects a vocabulary mismatch and data too short for one sample") {
  TokenData data = counting_tokens(100);
  CHECK(error_of([&] { DataLoader(data, plan_with(8, 512, 2), 1); })
            .find("counting: vocabulary: the model's vocabulary 512, but the data's tokenizer "
                  "has 256") == 0);
  data.tokens.resize(8);
  CHECK(error_of([&] { DataLoader(data, plan_with(8, 256, 2), 1); })
            .find("counting: tokens: at least 9 tokens (sequence 8 + 1) for one step, got 8") == 0);
  data.tokens.resize(9);
  CHECK_NOTHROW(DataLoader(data, plan_with(8, 256, 2), 1));
}

TEST_CASE("samples are a pure function of seed and step, inside the data") {
  const DataLoader a(counting_tokens(50), plan_with(8, 256, 3), 7);
  const DataLoader b(counting_tokens(50), plan_with(8, 256, 3), 7);
  const DataLoader c(counting_tokens(50), plan_with(8, 256, 3), 8);
  int same_as_other_seed = 0, same_as_next_step = 0;
  for (int i = 0; i < 6; ++i) {
    CHECK(a.sample_offset(3, i) == b.sample_offset(3, i));
    CHECK(a.sample_offset(3, i) >= 0);
    CHECK(a.sample_offset(3, i) <= 50 - 8 - 1);
    same_as_other_seed += a.sample_offset(3, i) == c.sample_offset(3, i);
    same_as_next_step += a.sample_offset(3, i) == a.sample_offset(4, i);
  }
  CHECK(same_as_other_seed < 6);
  CHECK(same_as_next_step < 6);
}

TEST_CASE("a replica's micro-batch is its slice of the whole micro-batch, targets shifted by one") {
  const DataLoader loader(counting_tokens(200), plan_with(4, 256, 6), 11);
  const MicroBatchTokens whole = loader.micro_batch(5, 1, 0, 6);
  const MicroBatchTokens part = loader.micro_batch(5, 1, 2, 3);  // samples 2..4
  CHECK(part.samples == 3);
  REQUIRE(part.inputs.size() == 12);
  CHECK(std::vector<int32_t>(whole.inputs.begin() + 8, whole.inputs.begin() + 20) == part.inputs);
  CHECK(std::vector<int32_t>(whole.targets.begin() + 8, whole.targets.begin() + 20) == part.targets);
  const int64_t offset = loader.sample_offset(5, 6 + 2);  // micro-batch 1 starts at sample 6
  for (int t = 0; t < 4; ++t) {
    CHECK(part.inputs[t] == static_cast<int32_t>(offset + t));
    CHECK(part.targets[t] == static_cast<int32_t>(offset + t + 1));
  }
}

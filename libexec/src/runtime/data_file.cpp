// File: data_file.cpp
// Binary token files (see data_file.h for the layout) and text files tokenised byte by byte.
#include "whale/exec/runtime/data_file.h"

#include <cstring>

#include "runtime/checkpoint_io.h"
#include "whale/exec/runtime/tokenizer.h"
#include "whale/plan/error.h"

namespace whale::exec {
namespace {

constexpr std::size_t kHeaderBytes = 24;

template <typename T>
void put(std::string& out, T value) {
  char raw[sizeof(T)];
  for (std::size_t i = 0; i < sizeof(T); ++i) raw[i] = static_cast<char>((value >> (8 * i)) & 0xff);
  out.append(raw, sizeof(T));
}

template <typename T>
T get(const std::string& in, std::size_t offset) {
  T value = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i)
    value |= static_cast<T>(static_cast<unsigned char>(in[offset + i])) << (8 * i);
  return value;
}

bool has_magic(const std::string& bytes) {
  return bytes.size() >= sizeof(kTokenFileMagic) &&
         std::memcmp(bytes.data(), kTokenFileMagic, sizeof(kTokenFileMagic)) == 0;
}

TokenData parse_token_file(const std::string& path, const std::string& bytes) {
  if (!has_magic(bytes) || bytes.size() < kHeaderBytes)
    throw Error(path, "header", "a whale token file starting with \"WHALETOK\"",
                "a text file is tokenised byte by byte; binary files come from write_token_file");
  const uint32_t version = get<uint32_t>(bytes, 8);
  if (version != kTokenFileVersion)
    throw Error(path, "header.version",
                "version " + std::to_string(kTokenFileVersion) + ", got " + std::to_string(version));
  TokenData data;
  data.source_file = path;
  data.vocabulary = static_cast<int>(get<uint32_t>(bytes, 12));
  const uint64_t count = get<uint64_t>(bytes, 16);
  if (data.vocabulary <= 0 || data.vocabulary > 65536)
    throw Error(path, "header.vocabulary", "a vocabulary in 1..65536, got " +
                                               std::to_string(data.vocabulary));
  // Compared as a token count first: 2 * count must not wrap around.
  if (count > (bytes.size() - kHeaderBytes) / 2 || bytes.size() != kHeaderBytes + 2 * count)
    throw Error(path, "header.tokens",
                std::to_string(count) + " tokens (" + std::to_string(kHeaderBytes + 2 * count) +
                    " bytes), but the file has " + std::to_string(bytes.size()) + " bytes",
                "the file is truncated or corrupt");
  data.tokens.resize(count);
  for (uint64_t i = 0; i < count; ++i) {
    data.tokens[i] = get<uint16_t>(bytes, kHeaderBytes + 2 * i);
    if (data.tokens[i] >= data.vocabulary)
      throw Error(path, "tokens[" + std::to_string(i) + "]",
                  "a token below the vocabulary " + std::to_string(data.vocabulary) + ", got " +
                      std::to_string(data.tokens[i]));
  }
  return data;
}

}  // namespace

void write_token_file(const TokenData& data, const std::string& path) {
  std::string bytes(kTokenFileMagic, sizeof(kTokenFileMagic));
  put<uint32_t>(bytes, kTokenFileVersion);
  put<uint32_t>(bytes, static_cast<uint32_t>(data.vocabulary));
  put<uint64_t>(bytes, data.tokens.size());
  for (std::size_t i = 0; i < data.tokens.size(); ++i) {
    if (data.tokens[i] >= data.vocabulary)
      throw Error(path, "tokens[" + std::to_string(i) + "]",
                  "a token below the vocabulary " + std::to_string(data.vocabulary));
    put<uint16_t>(bytes, data.tokens[i]);
  }
  write_file_atomically(path, bytes);
}

TokenData read_token_file(const std::string& path) {
  return parse_token_file(path, read_file_bytes(path));
}

TokenData load_tokens(const std::string& path) {
  const std::string bytes = read_file_bytes(path);
  if (has_magic(bytes)) return parse_token_file(path, bytes);
  TokenData data;
  data.source_file = path;
  data.vocabulary = kByteVocabulary;
  data.tokens = tokenize_bytes(bytes);
  return data;
}

}  // namespace whale::exec

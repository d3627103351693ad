// File: data_file.h
// Token data for training: a text file (tokenised byte by byte) or a binary token file.
//
// Binary token file, little-endian, 24-byte header then the tokens:
//   offset 0  char[8]  magic "WHALETOK"
//   offset 8  uint32   version (1)
//   offset 12 uint32   vocabulary size (every token is below it)
//   offset 16 uint64   token count N
//   offset 24 uint16   tokens[N]
// The file is exactly 24 + 2*N bytes long.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace whale::exec {

struct TokenData {
  std::string source_file;
  int vocabulary = 0;             // the tokenizer's vocabulary (256 for text)
  std::vector<uint16_t> tokens;
};

constexpr char kTokenFileMagic[8] = {'W', 'H', 'A', 'L', 'E', 'T', 'O', 'K'};
constexpr uint32_t kTokenFileVersion = 1;

/// Writes `data` in the binary format (a temporary file, then a rename). Throws whale::Error if
/// the path cannot be written or a token is not below data.vocabulary.
void write_token_file(const TokenData& data, const std::string& path);
/// Reads a binary token file. Throws whale::Error naming the file on a bad magic, version,
/// length or a token >= the header's vocabulary.
TokenData read_token_file(const std::string& path);
/// Reads a binary token file when the file starts with the magic, otherwise tokenises the
/// file as text with the byte-level tokenizer. Throws whale::Error if it cannot be read.
TokenData load_tokens(const std::string& path);

}  // namespace whale::exec

// File: tokenizer.h
// The byte-level tokenizer: every byte of a text is one token (vocabulary 256), so any file
// tokenises and detokenises losslessly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace whale::exec {

/// Tokens of the byte-level tokenizer: 0..255.
constexpr int kByteVocabulary = 256;

/// One token per byte, the byte's unsigned value.
std::vector<uint16_t> tokenize_bytes(const std::string& text);
/// The inverse of tokenize_bytes. Tokens >= 256 have no byte: throws std::out_of_range.
std::string detokenize_bytes(const std::vector<uint16_t>& tokens);

}  // namespace whale::exec

// File: tokenizer.cpp
// The byte-level tokenizer.
#include "whale/exec/runtime/tokenizer.h"

#include <stdexcept>

namespace whale::exec {

std::vector<uint16_t> tokenize_bytes(const std::string& text) {
  std::vector<uint16_t> tokens(text.size());
  for (std::size_t i = 0; i < text.size(); ++i)
    tokens[i] = static_cast<unsigned char>(text[i]);
  return tokens;
}

std::string detokenize_bytes(const std::vector<uint16_t>& tokens) {
  std::string text(tokens.size(), '\0');
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] >= kByteVocabulary)
      throw std::out_of_range("token " + std::to_string(tokens[i]) + " is not a byte");
    text[i] = static_cast<char>(tokens[i]);
  }
  return text;
}

}  // namespace whale::exec

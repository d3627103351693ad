// File: hashing.h
// The two hashes libexec uses: splitmix64 (counter-based random numbers: parameter init, data
// sampling) and 64-bit FNV-1a (names, checkpoint fingerprints and checksums). Both are fixed
// forever: changing them changes initial weights, sampled batches and checkpoint validity.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "backend/kernel_math/splitmix64.h"

namespace whale::exec {

using kmath::splitmix64;  // kernel_math/splitmix64.h: host and device share it

/// 64-bit FNV-1a of `size` bytes, continuing from `hash` (the FNV offset basis by default).
inline uint64_t fnv1a(const char* data, std::size_t size, uint64_t hash = 0xCBF29CE484222325ull) {
  for (std::size_t i = 0; i < size; ++i) {
    hash ^= static_cast<unsigned char>(data[i]);
    hash *= 0x100000001B3ull;
  }
  return hash;
}

inline uint64_t fnv1a(const std::string& text) { return fnv1a(text.data(), text.size()); }

}  // namespace whale::exec

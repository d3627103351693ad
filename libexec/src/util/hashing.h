// File: hashing.h
// The two hashes libexec uses: splitmix64 (counter-based random numbers: parameter init, data
// sampling) and 64-bit FNV-1a (names, checkpoint fingerprints and checksums). Both are fixed
// forever: changing them changes initial weights, sampled batches and checkpoint validity.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace whale::exec {

/// splitmix64's finaliser of x + golden ratio: a bijective, well-mixed 64-bit hash.
inline uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

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

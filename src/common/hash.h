// Stable 64-bit hashing for distribution: a representation's rows go to the
// slice whose hash range holds the hash of their distribution key. The result
// is persisted implicitly (it decides where rows live): DO NOT CHANGE.
#pragma once

#include <cstdint>
#include <string_view>

namespace shale {

// 64-bit FNV-1a over the bytes, finished with a murmur3 fmix64 avalanche so
// that nearby keys spread over the whole range.
inline uint64_t HashBytes(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

}  // namespace shale

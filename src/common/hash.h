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

// The splitmix64 finalizer: a bijection of 64-bit words whose every
// output bit depends on every input bit (statistics sketches re-mix the
// distribution hash with it; a seeded generator steps a counter through
// it). Not used by HashBytes; changing it changes no data's placement.
inline uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace shale

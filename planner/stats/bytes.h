// Little-endian u64 fields of the sketches' serialized forms (quantile
// sketch, hotlist), written to and read from the front of a byte string.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace shale::planner::stats {

inline void PutU64(uint64_t v, std::string* out) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

// False (and `in` unchanged) when fewer than 8 bytes are left.
inline bool GetU64(std::string_view* in, uint64_t* v) {
  if (in->size() < 8) return false;
  *v = 0;
  for (int i = 0; i < 8; ++i) *v |= static_cast<uint64_t>(static_cast<uint8_t>((*in)[i])) << (8 * i);
  in->remove_prefix(8);
  return true;
}

}  // namespace shale::planner::stats

// The fields of the statistics' serialized forms (quantile sketch,
// hotlist) and of IndexStatistics' prefix values: a format version byte,
// little-endian u64s and length-prefixed byte strings, written to the end
// of a string and read from the front of a view.
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

// A u64 length, then the bytes.
inline void PutBytes(std::string_view bytes, std::string* out) {
  PutU64(bytes.size(), out);
  out->append(bytes);
}

// False (and `in` possibly advanced) when the length or the bytes are
// missing.
inline bool GetBytes(std::string_view* in, std::string* out) {
  uint64_t size;
  if (!GetU64(in, &size) || size > in->size()) return false;
  out->assign(in->substr(0, size));
  in->remove_prefix(size);
  return true;
}

// Takes the leading format version byte; false unless it is `version`.
inline bool TakeVersion(std::string_view* in, uint8_t version) {
  if (in->empty() || static_cast<uint8_t>((*in)[0]) != version) return false;
  in->remove_prefix(1);
  return true;
}

}  // namespace shale::planner::stats

// Primitive encodings of the MySQL protocol: little-endian fixed-width
// integers, length-encoded integers and strings, NUL-terminated strings.
// Writers append to a std::string; PayloadReader decodes one packet payload
// and reports truncation and bad lengths as errors, never reading past the
// end. Spec: docs/formats/mysql-protocol.md.
//
// Thread-safety: free functions are pure; a PayloadReader is a cursor over
// caller-owned bytes, used by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "shale/status.h"

namespace shale::server {

// Appends the low `bytes` bytes of `v`, least significant first.
// REQUIRES: 1 <= bytes <= 8.
void PutFixedInt(std::string* out, uint64_t v, int bytes);

// Length-encoded integer: < 251 in one byte; otherwise 0xFC + 2 bytes,
// 0xFD + 3 bytes or 0xFE + 8 bytes.
void PutLenencInt(std::string* out, uint64_t v);
// Number of bytes PutLenencInt writes for `v`.
size_t LenencIntSize(uint64_t v);
// Length-encoded string: PutLenencInt(size) then the bytes.
void PutLenencString(std::string* out, std::string_view s);
// The bytes then a 0x00 terminator. REQUIRES: `s` holds no NUL byte.
void PutNulString(std::string* out, std::string_view s);

// A bounds-checked cursor over one packet payload. Every Read* fails with
// Status::InvalidArgument naming `what` when the payload is too short.
class PayloadReader {
 public:
  explicit PayloadReader(std::string_view payload) : data_(payload) {}

  size_t remaining() const { return data_.size() - pos_; }
  bool AtEnd() const { return pos_ == data_.size(); }
  std::string_view Rest() const { return data_.substr(pos_); }

  Result<uint64_t> ReadFixedInt(int bytes, const char* what);
  // A length-encoded integer. 0xFB (NULL) and 0xFF (error header) are not
  // valid integer prefixes and fail.
  Result<uint64_t> ReadLenencInt(const char* what);
  // Exactly `n` bytes.
  Result<std::string_view> ReadBytes(uint64_t n, const char* what);
  Result<std::string_view> ReadLenencString(const char* what);
  // Bytes up to a 0x00 terminator, which is consumed; fails without one.
  Result<std::string_view> ReadNulString(const char* what);
  // Everything left (string<EOF>).
  std::string_view ReadRest();
  Status Skip(uint64_t n, const char* what);

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

}  // namespace shale::server

// Implements the primitive encodings of docs/formats/mysql-protocol.md.
#include "src/server/wire_codec.h"

#include <fmt/format.h>

namespace shale::server {
namespace {

Status Truncated(const char* what, uint64_t need, size_t have) {
  return Status::InvalidArgument(
      fmt::format("malformed packet: {} needs {} bytes, {} left", what, need, have));
}

}  // namespace

void PutFixedInt(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) {
    out->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  }
}

size_t LenencIntSize(uint64_t v) {
  if (v < 251) return 1;
  if (v <= 0xFFFF) return 3;
  if (v <= 0xFFFFFF) return 4;
  return 9;
}

void PutLenencInt(std::string* out, uint64_t v) {
  if (v < 251) {
    out->push_back(static_cast<char>(v));
  } else if (v <= 0xFFFF) {
    out->push_back(static_cast<char>(0xFC));
    PutFixedInt(out, v, 2);
  } else if (v <= 0xFFFFFF) {
    out->push_back(static_cast<char>(0xFD));
    PutFixedInt(out, v, 3);
  } else {
    out->push_back(static_cast<char>(0xFE));
    PutFixedInt(out, v, 8);
  }
}

void PutLenencString(std::string* out, std::string_view s) {
  PutLenencInt(out, s.size());
  out->append(s);
}

void PutNulString(std::string* out, std::string_view s) {
  out->append(s);
  out->push_back('\0');
}

Result<uint64_t> PayloadReader::ReadFixedInt(int bytes, const char* what) {
  if (remaining() < static_cast<size_t>(bytes)) return Truncated(what, bytes, remaining());
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) {
    v |= static_cast<uint64_t>(static_cast<uint8_t>(data_[pos_ + i])) << (8 * i);
  }
  pos_ += bytes;
  return v;
}

Result<uint64_t> PayloadReader::ReadLenencInt(const char* what) {
  if (remaining() < 1) return Truncated(what, 1, 0);
  uint8_t first = static_cast<uint8_t>(data_[pos_]);
  int width = 0;
  switch (first) {
    case 0xFC: width = 2; break;
    case 0xFD: width = 3; break;
    case 0xFE: width = 8; break;
    case 0xFB:
    case 0xFF:
      return Status::InvalidArgument(
          fmt::format("malformed packet: {} has invalid length prefix 0x{:02X}", what, first));
    default:
      ++pos_;
      return static_cast<uint64_t>(first);
  }
  if (remaining() < static_cast<size_t>(1 + width)) return Truncated(what, 1 + width, remaining());
  ++pos_;
  return ReadFixedInt(width, what);
}

Result<std::string_view> PayloadReader::ReadBytes(uint64_t n, const char* what) {
  if (remaining() < n) return Truncated(what, n, remaining());
  std::string_view s = data_.substr(pos_, n);
  pos_ += n;
  return s;
}

Result<std::string_view> PayloadReader::ReadLenencString(const char* what) {
  size_t start = pos_;
  Result<uint64_t> n = ReadLenencInt(what);
  if (!n.ok()) return n.status();
  Result<std::string_view> s = ReadBytes(*n, what);
  if (!s.ok()) pos_ = start;  // leave the cursor where the string began
  return s;
}

Result<std::string_view> PayloadReader::ReadNulString(const char* what) {
  size_t nul = data_.find('\0', pos_);
  if (nul == std::string_view::npos) {
    return Status::InvalidArgument(fmt::format("malformed packet: {} is not NUL-terminated", what));
  }
  std::string_view s = data_.substr(pos_, nul - pos_);
  pos_ = nul + 1;
  return s;
}

std::string_view PayloadReader::ReadRest() {
  std::string_view s = data_.substr(pos_);
  pos_ = data_.size();
  return s;
}

Status PayloadReader::Skip(uint64_t n, const char* what) {
  if (remaining() < n) return Truncated(what, n, remaining());
  pos_ += n;
  return Status::OK();
}

}  // namespace shale::server

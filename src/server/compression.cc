// Compressed packet framing (compression.h).
#include "src/server/compression.h"

#include <algorithm>

#include <fmt/format.h>
#include <zlib.h>

#include "src/server/protocol_constants.h"
#include "src/server/wire_codec.h"

namespace shale::server {

namespace {

uint32_t Read3(std::string_view b, size_t at) {
  return static_cast<uint8_t>(b[at]) | (static_cast<uint32_t>(static_cast<uint8_t>(b[at + 1])) << 8) |
         (static_cast<uint32_t>(static_cast<uint8_t>(b[at + 2])) << 16);
}

}  // namespace

void AppendCompressedFrames(std::string_view data, uint8_t* seq, std::string* out) {
  // (Empty `data` gives one empty stored frame.)
  size_t pos = 0;
  std::string deflated;
  do {
    // Stored chunks must fit the 3-byte payload length, deflated ones may
    // grow slightly, so cut below the limit.
    const size_t n = std::min<size_t>(data.size() - pos, kMaxFramePayload - 64);
    std::string_view chunk = data.substr(pos, n);
    pos += n;
    bool stored = true;
    if (chunk.size() >= kMinCompressLength) {
      uLongf bound = compressBound(static_cast<uLong>(chunk.size()));
      deflated.resize(bound);
      int rc = compress(reinterpret_cast<Bytef*>(deflated.data()), &bound,
                        reinterpret_cast<const Bytef*>(chunk.data()),
                        static_cast<uLong>(chunk.size()));
      if (rc == Z_OK && bound < chunk.size()) {
        deflated.resize(bound);
        stored = false;
      }
    }
    std::string_view payload = stored ? chunk : std::string_view(deflated);
    PutFixedInt(out, payload.size(), 3);
    out->push_back(static_cast<char>((*seq)++));
    PutFixedInt(out, stored ? 0 : chunk.size(), 3);
    out->append(payload);
  } while (pos < data.size());
}

void CompressedFrameDecoder::Feed(std::string_view bytes) {
  if (pos_ > 0 && pos_ == buffer_.size()) {
    buffer_.clear();
    pos_ = 0;
  } else if (pos_ > (1u << 20)) {
    buffer_.erase(0, pos_);
    pos_ = 0;
  }
  buffer_.append(bytes);
}

Result<std::optional<CompressedFrame>> CompressedFrameDecoder::Next() {
  std::string_view avail = std::string_view(buffer_).substr(pos_);
  if (avail.size() < kCompressedHeaderSize) return std::optional<CompressedFrame>();
  const uint32_t length = Read3(avail, 0);
  const uint8_t seq = static_cast<uint8_t>(avail[3]);
  const uint32_t inflated_length = Read3(avail, 4);
  if (avail.size() < kCompressedHeaderSize + length) return std::optional<CompressedFrame>();
  std::string_view payload = avail.substr(kCompressedHeaderSize, length);
  CompressedFrame frame;
  frame.seq = seq;
  if (inflated_length == 0) {
    frame.data.assign(payload);
  } else {
    frame.data.resize(inflated_length);
    uLongf out_len = inflated_length;
    int rc = uncompress(reinterpret_cast<Bytef*>(frame.data.data()), &out_len,
                        reinterpret_cast<const Bytef*>(payload.data()),
                        static_cast<uLong>(payload.size()));
    if (rc != Z_OK || out_len != inflated_length) {
      return Status::InvalidArgument(fmt::format(
          "compressed packet does not inflate to its {} bytes (zlib {})", inflated_length, rc));
    }
  }
  pos_ += kCompressedHeaderSize + length;
  return std::optional<CompressedFrame>(std::move(frame));
}

}  // namespace shale::server

// Implements the framing of docs/formats/mysql-protocol.md ("Packets").
#include "src/server/packet.h"

#include <algorithm>

#include <fmt/format.h>

#include "src/common/errors.h"
#include "src/server/protocol_constants.h"
#include "src/server/wire_codec.h"

namespace shale::server {

void AppendFramed(std::string_view payload, uint8_t* seq, std::string* out) {
  // Every frame but the last is exactly kMaxFramePayload bytes; a payload
  // that is a multiple of it ends with an empty frame so the reader knows
  // it is complete.
  out->reserve(out->size() + payload.size() + kFrameHeaderSize * (payload.size() / kMaxFramePayload + 1));
  for (;;) {
    size_t n = std::min<size_t>(payload.size(), kMaxFramePayload);
    PutFixedInt(out, n, 3);
    out->push_back(static_cast<char>(*seq));
    ++*seq;  // wraps at 256 by uint8_t arithmetic
    out->append(payload.substr(0, n));
    payload.remove_prefix(n);
    if (n < kMaxFramePayload) break;
  }
}

void PacketDecoder::Feed(std::string_view bytes) {
  Compact();
  buffer_.append(bytes);
}

void PacketDecoder::Compact() {
  // Drop consumed bytes once they are the larger part of the buffer, so
  // copying stays amortised O(1) per byte.
  if (pos_ > 0 && pos_ >= buffer_.size() - pos_) {
    buffer_.erase(0, pos_);
    pos_ = 0;
  }
}

Result<std::optional<Packet>> PacketDecoder::Next() {
  for (;;) {
    if (buffer_.size() - pos_ < kFrameHeaderSize) return std::optional<Packet>();
    const auto* h = reinterpret_cast<const uint8_t*>(buffer_.data() + pos_);
    uint32_t length = h[0] | (h[1] << 8) | (h[2] << 16);
    uint8_t seq = h[3];
    last_header_seq_ = seq;
    if (in_payload_ && seq != expected_seq_) {
      return Status::InvalidArgument(fmt::format(
          "packets out of order: continuation frame has sequence id {}, expected {}", seq,
          expected_seq_));
    }
    if (static_cast<uint64_t>(partial_.size()) + length > max_payload_) {
      return SqlError(ErrorCode::kNetPacketTooLarge,
                      "Got a packet bigger than 'max_allowed_packet' bytes");
    }
    if (buffer_.size() - pos_ - kFrameHeaderSize < length) return std::optional<Packet>();

    if (!in_payload_) {
      in_payload_ = true;
      first_seq_ = seq;
      partial_.clear();
    }
    partial_.append(buffer_, pos_ + kFrameHeaderSize, length);
    pos_ += kFrameHeaderSize + length;
    expected_seq_ = static_cast<uint8_t>(seq + 1);
    if (length < kMaxFramePayload) {
      Packet p;
      p.payload = std::move(partial_);
      p.seq = first_seq_;
      p.next_seq = expected_seq_;
      partial_ = std::string();
      in_payload_ = false;
      Compact();
      return std::optional<Packet>(std::move(p));
    }
  }
}

}  // namespace shale::server

// MySQL packet framing. On the wire every payload travels in frames of a
// 3-byte little-endian length and a 1-byte sequence id. A payload of
// 0xFFFFFF bytes or more is cut into frames of exactly 0xFFFFFF bytes
// followed by a shorter one (possibly empty); the reader joins them. The
// sequence id starts at 0 with each command (and with the server greeting)
// and goes up by one per frame in either direction, wrapping at 256.
// Spec: docs/formats/mysql-protocol.md.
//
// Invariants of PacketDecoder:
//  1. It never holds more than one logical payload of at most
//     `max_payload` bytes plus the bytes fed after it; a frame header that
//     would take the payload past `max_payload` fails at once, before its
//     body arrives (so a hostile length never makes us buffer).
//  2. Continuation frames must carry consecutive sequence ids.
//  3. After an error the decoder is unusable; the connection closes.
//
// Thread-safety: AppendFramed is pure; a PacketDecoder belongs to one
// connection and is used by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "shale/status.h"

namespace shale::server {

inline constexpr size_t kFrameHeaderSize = 4;

// Appends `payload` to `out` as one or more frames, the first with sequence
// id `*seq`; on return `*seq` is the id for the next frame.
void AppendFramed(std::string_view payload, uint8_t* seq, std::string* out);

// One logical payload read from the client.
struct Packet {
  std::string payload;
  uint8_t seq = 0;       // sequence id of its first frame
  uint8_t next_seq = 0;  // the id the server's reply must start with
};

// Turns the byte stream from a socket into logical payloads.
class PacketDecoder {
 public:
  // `max_payload`: the largest joined payload accepted (max_allowed_packet).
  explicit PacketDecoder(uint32_t max_payload) : max_payload_(max_payload) {}

  // Appends bytes received from the client.
  void Feed(std::string_view bytes);

  // The next complete payload, std::nullopt if more bytes are needed, or an
  // error: ER_NET_PACKET_TOO_LARGE (1153) when the payload would exceed
  // `max_payload`, InvalidArgument when a continuation frame is out of order.
  Result<std::optional<Packet>> Next();

  // Sequence id of the last frame header looked at, for the id of an error
  // reply to a rejected packet.
  uint8_t last_header_seq() const { return last_header_seq_; }
  // Bytes fed but not yet returned as part of a payload.
  size_t buffered() const { return buffer_.size() - pos_ + partial_.size(); }

 private:
  void Compact();

  uint32_t max_payload_;
  std::string buffer_;    // bytes fed; [pos_, end) are not consumed yet
  size_t pos_ = 0;
  std::string partial_;   // joined frames of a payload still in progress
  bool in_payload_ = false;
  uint8_t first_seq_ = 0;
  uint8_t expected_seq_ = 0;  // for the next continuation frame
  uint8_t last_header_seq_ = 0;
};

}  // namespace shale::server

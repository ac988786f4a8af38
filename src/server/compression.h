// CLIENT_COMPRESS: the compressed packet framing of the MySQL protocol,
// used once a client that asked for it has logged in. Every byte of the
// ordinary packet stream (packet.h frames, any number and any cut) travels
// inside compressed frames:
//   int<3> length of the frame's payload, int<1> compressed sequence id,
//   int<3> length before compression (0: the payload is stored as is),
//   then the payload (zlib-deflated unless stored).
// The compressed sequence id starts at 0 with each command, like the
// packet sequence id, and counts compressed frames in both directions.
// Spec: docs/formats/mysql-protocol.md, "Compression".
//
// Invariants of CompressedFrameDecoder:
//  1. It buffers at most one frame (header + at most 0xFFFFFF bytes) plus
//     what was fed after it; an inflated frame is at most 0xFFFFFF bytes
//     because its announced length is, so a small frame cannot inflate
//     without bound.
//  2. A frame whose payload does not inflate to exactly its announced
//     length is an error; after an error the decoder is unusable.
//
// Thread-safety: AppendCompressedFrames is pure; a decoder belongs to one
// connection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "shale/status.h"

namespace shale::server {

inline constexpr size_t kCompressedHeaderSize = 7;
// Frames smaller than this are stored, not deflated (as MySQL does).
inline constexpr size_t kMinCompressLength = 50;

// Appends `data` to `out` as compressed frames of at most 0xFFFFFF bytes
// each, the first with compressed sequence id `*seq`; on return `*seq` is
// the id for the next frame. A chunk that deflation would not shrink is
// stored.
void AppendCompressedFrames(std::string_view data, uint8_t* seq, std::string* out);

struct CompressedFrame {
  uint8_t seq = 0;
  std::string data;  // inflated payload
};

class CompressedFrameDecoder {
 public:
  void Feed(std::string_view bytes);
  // The next whole frame, inflated; std::nullopt if more bytes are needed;
  // InvalidArgument if the frame does not inflate to its announced length.
  Result<std::optional<CompressedFrame>> Next();
  size_t buffered() const { return buffer_.size() - pos_; }

 private:
  std::string buffer_;
  size_t pos_ = 0;
};

}  // namespace shale::server

// Fuzzes the packet framing a connection reads: PacketDecoder (4-byte
// headers, payloads over 16 MiB split into frames, sequence ids,
// max_allowed_packet). The input is fed in chunks whose sizes come from its
// first bytes, so partial headers and frames are exercised too.
//
// Properties checked: every payload returned is at most max_allowed_packet;
// the decoder never holds more than it was fed; after an error nothing more
// is asked of it (a connection closes then).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "src/server/packet.h"

using shale::server::PacketDecoder;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint32_t max_payload = 16 + (static_cast<uint32_t>(data[0]) << 4);
  const size_t chunk = 1 + data[1] % 64;
  std::string_view input(reinterpret_cast<const char*>(data) + 2, size - 2);
  PacketDecoder decoder(max_payload);
  size_t fed = 0;
  while (!input.empty()) {
    const std::string_view part = input.substr(0, chunk);
    input.remove_prefix(part.size());
    decoder.Feed(part);
    fed += part.size();
    while (true) {
      auto next = decoder.Next();
      if (!next.ok()) return 0;  // the connection would close here
      if (!next->has_value()) break;
      if ((*next)->payload.size() > max_payload) std::abort();
    }
    if (decoder.buffered() > fed) std::abort();
  }
  return 0;
}

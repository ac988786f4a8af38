// Fuzzes the compressed protocol's framing (CLIENT_COMPRESS): 7-byte
// headers, zlib-deflated or stored frames, fed in chunks.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "src/server/compression.h"

using shale::server::CompressedFrameDecoder;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const size_t chunk = 1 + data[0] % 64;
  std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  CompressedFrameDecoder decoder;
  while (!input.empty()) {
    const std::string_view part = input.substr(0, chunk);
    input.remove_prefix(part.size());
    decoder.Feed(part);
    while (true) {
      auto next = decoder.Next();
      if (!next.ok()) return 0;
      if (!next->has_value()) break;
      if ((*next)->data.size() > 0xFFFFFF) std::abort();
    }
  }
  return 0;
}

#include "rebalancer/placement.h"

#include <algorithm>

namespace shale::rebalancer {

std::vector<SlicePlacement> PlaceNewRepresentation(uint32_t count, uint32_t replicas,
                                                   const std::vector<std::string>& nodes) {
  std::vector<SlicePlacement> out(count);
  const unsigned __int128 space = static_cast<unsigned __int128>(1) << 64;
  const uint32_t copies = std::min<uint32_t>(replicas, static_cast<uint32_t>(nodes.size()));
  for (uint32_t i = 0; i < count; ++i) {
    unsigned __int128 begin = space * i / count;
    unsigned __int128 end = space * (i + 1) / count - 1;
    out[i].hash_begin = static_cast<uint64_t>(begin);
    out[i].hash_end = static_cast<uint64_t>(end);
    for (uint32_t r = 0; r < copies; ++r) out[i].replicas.push_back(nodes[(i + r) % nodes.size()]);
  }
  return out;
}

}  // namespace shale::rebalancer

#include "rebalancer/placement.h"

#include <algorithm>
#include <tuple>

namespace shale::rebalancer {

namespace {

uint32_t CountOf(const std::map<std::string, uint32_t>& m, const std::string& node) {
  auto it = m.find(node);
  return it == m.end() ? 0 : it->second;
}

}  // namespace

void NodeLoad::Add(const std::vector<std::string>& placed) {
  for (const std::string& n : placed) ++replicas[n];
  if (!placed.empty()) ++ranking[placed.front()];
}

std::vector<SlicePlacement> PlaceNewRepresentation(uint32_t count, uint32_t replicas,
                                                   const std::vector<std::string>& nodes, NodeLoad* load) {
  NodeLoad local;
  if (load == nullptr) load = &local;
  std::vector<SlicePlacement> out(count);
  const unsigned __int128 space = static_cast<unsigned __int128>(1) << 64;
  const uint32_t copies = std::min<uint32_t>(replicas, static_cast<uint32_t>(nodes.size()));
  for (uint32_t i = 0; i < count; ++i) {
    unsigned __int128 begin = space * i / count;
    unsigned __int128 end = space * (i + 1) / count - 1;
    out[i].hash_begin = static_cast<uint64_t>(begin);
    out[i].hash_end = static_cast<uint64_t>(end);
    // The `copies` nodes holding the fewest replicas; among equals the one
    // ranking fewer slices, then the rotation (node i % n first).
    std::vector<size_t> order(nodes.size());
    for (size_t k = 0; k < nodes.size(); ++k) order[k] = k;
    auto rotation = [&](size_t k) { return (k + nodes.size() - i % nodes.size()) % nodes.size(); };
    auto key = [&](size_t k) {
      return std::make_tuple(CountOf(load->replicas, nodes[k]), CountOf(load->ranking, nodes[k]), rotation(k));
    };
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
    order.resize(copies);
    // The ranking replica: the chosen node ranking the fewest slices.
    auto ranker = std::min_element(order.begin(), order.end(), [&](size_t a, size_t b) {
      return std::make_tuple(CountOf(load->ranking, nodes[a]), rotation(a)) <
             std::make_tuple(CountOf(load->ranking, nodes[b]), rotation(b));
    });
    std::rotate(order.begin(), ranker, ranker + 1);
    for (size_t k : order) out[i].replicas.push_back(nodes[k]);
    load->Add(out[i].replicas);
  }
  return out;
}

}  // namespace shale::rebalancer

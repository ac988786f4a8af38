#include "rebalancer/placement.h"

#include <gtest/gtest.h>

#include <set>

namespace shale::rebalancer {
namespace {

TEST(PlacementTest, RangesCoverHashSpaceWithoutGaps) {
  for (uint32_t count : {1u, 2u, 3u, 4u, 7u, 64u}) {
    auto p = PlaceNewRepresentation(count, 2, {"a", "b", "c"});
    ASSERT_EQ(p.size(), count);
    EXPECT_EQ(p.front().hash_begin, 0u);
    EXPECT_EQ(p.back().hash_end, UINT64_MAX);
    for (size_t i = 1; i < p.size(); ++i) {
      EXPECT_EQ(p[i].hash_begin, p[i - 1].hash_end + 1) << "count=" << count << " i=" << i;
      EXPECT_LT(p[i].hash_begin, p[i].hash_end);
    }
  }
}

TEST(PlacementTest, ReplicasOnDistinctNodesAndRankingRotates) {
  auto p = PlaceNewRepresentation(6, 2, {"a", "b", "c"});
  std::set<std::string> rankers;
  for (const auto& s : p) {
    ASSERT_EQ(s.replicas.size(), 2u);
    EXPECT_NE(s.replicas[0], s.replicas[1]);
    rankers.insert(s.replicas[0]);
  }
  EXPECT_EQ(rankers.size(), 3u);
}

TEST(PlacementTest, ReplicaCountCappedByNodeCount) {
  auto p = PlaceNewRepresentation(4, 3, {"only"});
  for (const auto& s : p) EXPECT_EQ(s.replicas, std::vector<std::string>{"only"});
}

}  // namespace
}  // namespace shale::rebalancer

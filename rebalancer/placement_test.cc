#include "rebalancer/placement.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "rebalancer/planner.h"

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

// Tables created one after another (a primary key and indexes each, as
// CREATE TABLE places them) on a cluster: every node's replica count stays
// within one of the others' (ranking replicas within two), and the planner — which
// moves replicas when counts differ by more than one — has nothing to do.
TEST(PlacementTest, PlacementAndPlannerAgreeAfterManyTables) {
  for (size_t n_nodes : {2u, 3u, 4u, 5u}) {
    for (uint32_t replicas : {1u, 2u, 3u}) {
      std::vector<std::string> nodes;
      for (size_t k = 0; k < n_nodes; ++k) nodes.push_back("node" + std::to_string(k + 1));
      NodeLoad load;
      std::vector<SliceState> states;
      uint64_t next_slice = 1;
      for (uint64_t table = 1; table <= 7; ++table) {
        const uint32_t count = std::max<uint32_t>(4, static_cast<uint32_t>(n_nodes)) + table % 3;
        const size_t reps = 1 + table % 4;  // primary + indexes
        for (size_t r = 0; r < reps; ++r) {
          for (const SlicePlacement& p : PlaceNewRepresentation(count, replicas, nodes, &load)) {
            SliceState s;
            s.table_id = table;
            s.slice_id = next_slice++;
            s.wanted = replicas;
            s.replicas = p.replicas;
            ASSERT_EQ(s.replicas.size(), std::min<size_t>(replicas, n_nodes));
            ASSERT_EQ(std::set<std::string>(s.replicas.begin(), s.replicas.end()).size(), s.replicas.size());
            states.push_back(std::move(s));
          }
          std::map<std::string, uint32_t> held, ranks;
          for (const SliceState& s : states) {
            for (const std::string& n : s.replicas) ++held[n];
            ++ranks[s.replicas.front()];
          }
          uint32_t lo = UINT32_MAX, hi = 0, rlo = UINT32_MAX, rhi = 0;
          for (const std::string& n : nodes) {
            lo = std::min(lo, held[n]);
            hi = std::max(hi, held[n]);
            rlo = std::min(rlo, ranks[n]);
            rhi = std::max(rhi, ranks[n]);
          }
          EXPECT_LE(hi - lo, 1u) << n_nodes << " nodes, " << replicas << " replicas, table " << table;
          EXPECT_LE(rhi - rlo, 2u) << n_nodes << " nodes, " << replicas << " replicas, table " << table;
          EXPECT_TRUE(Plan(states, nodes, {}).empty())
              << n_nodes << " nodes, " << replicas << " replicas, table " << table;
        }
      }
    }
  }
}

// The rotation alone (the placement before it counted what nodes hold) put
// 3/3/2 replicas of a 4-slice representation on three nodes, always the
// same way round: a table with an index was 6/6/4 and the rebalancer moved
// replicas right after CREATE TABLE.
TEST(PlacementTest, SecondRepresentationFillsTheEmptiestNode) {
  NodeLoad load;
  std::map<std::string, int> held;
  for (int rep = 0; rep < 2; ++rep) {
    for (const auto& p : PlaceNewRepresentation(4, 2, {"a", "b", "c"}, &load)) {
      for (const auto& n : p.replicas) ++held[n];
    }
  }
  EXPECT_EQ(held["a"] + held["b"] + held["c"], 16);
  for (const auto& [n, c] : held) EXPECT_GE(c, 5) << n;
  for (const auto& [n, c] : held) EXPECT_LE(c, 6) << n;
}

}  // namespace
}  // namespace shale::rebalancer

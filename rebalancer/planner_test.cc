#include "rebalancer/planner.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace shale::rebalancer {
namespace {

SliceState Slice(uint64_t id, std::vector<std::string> replicas, uint32_t wanted = 2) {
  SliceState s;
  s.table_id = 10;
  s.slice_id = id;
  s.wanted = wanted;
  s.replicas = std::move(replicas);
  return s;
}

TEST(PlannerTest, FullyProtectedAndBalancedPlansNothing) {
  std::vector<SliceState> slices{Slice(1, {"a", "b"}), Slice(2, {"b", "c"}), Slice(3, {"c", "a"})};
  EXPECT_TRUE(Plan(slices, {"a", "b", "c"}, {}).empty());
}

TEST(PlannerTest, ReprotectsEveryUnderProtectedSliceOntoTheNodeWithout) {
  // Node c died: slices 2 and 3 lost a replica.
  std::vector<SliceState> slices{Slice(1, {"a", "b"}), Slice(2, {"b"}), Slice(3, {"a"})};
  auto plan = Plan(slices, {"a", "b"}, {});
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0], (PlannedTask{TaskKind::kReprotect, 10, 2, "b", "a", {}}));
  EXPECT_EQ(plan[1], (PlannedTask{TaskKind::kReprotect, 10, 3, "a", "b", {}}));
}

TEST(PlannerTest, TargetIsTheLeastLoadedNodeWithoutAReplica) {
  // d holds nothing, c holds one replica: d is chosen.
  std::vector<SliceState> slices{Slice(1, {"a"}), Slice(2, {"b", "c"}), Slice(3, {"a", "b"})};
  auto plan = Plan(slices, {"a", "b", "c", "d"}, {});
  ASSERT_FALSE(plan.empty());
  EXPECT_EQ(plan[0].slice_id, 1u);
  EXPECT_EQ(plan[0].target, "d");
  EXPECT_EQ(plan[0].source, "a");
}

TEST(PlannerTest, SourcesSpreadOverServingReplicas) {
  // REPLICAS=3 over 4 nodes after d died: each slice has two serving
  // replicas; sources are spread rather than all from one node.
  std::vector<SliceState> slices;
  for (uint64_t i = 1; i <= 4; ++i) slices.push_back(Slice(i, {"a", "b"}, 3));
  auto plan = Plan(slices, {"a", "b", "c"}, {});
  ASSERT_EQ(plan.size(), 4u);
  std::map<std::string, int> sources;
  for (const auto& t : plan) {
    EXPECT_EQ(t.target, "c");
    ++sources[t.source];
  }
  EXPECT_EQ(sources["a"], 2);
  EXPECT_EQ(sources["b"], 2);
}

TEST(PlannerTest, LimitsPerNodeAndOverall) {
  std::vector<SliceState> slices;
  for (uint64_t i = 1; i <= 10; ++i) slices.push_back(Slice(i, {"a"}));
  PlanLimits per_node;
  per_node.max_per_node = 3;
  EXPECT_EQ(Plan(slices, {"a", "b", "c"}, per_node).size(), 3u);  // a is the source of every copy
  PlanLimits overall;
  overall.max_tasks = 2;
  EXPECT_EQ(Plan(slices, {"a", "b", "c"}, overall).size(), 2u);
  // Running copies count against the limits.
  slices[0].building = {"b"};
  slices[0].building_sources = {"a"};
  EXPECT_EQ(Plan(slices, {"a", "b", "c"}, per_node).size(), 2u);
}

TEST(PlannerTest, BuildingReplicasCountAsInProgress) {
  SliceState s = Slice(1, {"a"});
  s.building = {"b"};
  s.building_sources = {"a"};
  EXPECT_TRUE(Plan({s}, {"a", "b", "c"}, {}).empty());
}

TEST(PlannerTest, WantedIsCappedAtLiveNodesAndLostSlicesAreSkipped) {
  std::vector<SliceState> slices{Slice(1, {"a"}, 3), Slice(2, {}, 2)};
  EXPECT_TRUE(Plan(slices, {"a"}, {}).empty());
  auto plan = Plan(slices, {"a", "b"}, {});
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].slice_id, 1u);
}

TEST(PlannerTest, RebalancesOntoAReturnedNodeUntilWithinOne) {
  // c came back empty; a and b hold 4 replicas each.
  std::vector<SliceState> slices{Slice(1, {"a", "b"}), Slice(2, {"b", "a"}), Slice(3, {"a", "b"}),
                                 Slice(4, {"b", "a"})};
  auto plan = Plan(slices, {"a", "b", "c"}, {});
  ASSERT_EQ(plan.size(), 2u);
  std::set<uint64_t> moved;
  std::map<std::string, int> dropped;
  for (const auto& t : plan) {
    EXPECT_EQ(t.kind, TaskKind::kRebalance);
    EXPECT_EQ(t.target, "c");
    EXPECT_EQ(t.source, t.drop_from);
    moved.insert(t.slice_id);
    ++dropped[t.drop_from];
    // The dropped replica does not rank (reads stay where they are).
    const SliceState& s = slices[t.slice_id - 1];
    EXPECT_NE(s.replicas[0], t.drop_from);
  }
  EXPECT_EQ(moved.size(), 2u);
  EXPECT_EQ(dropped["a"], 1);
  EXPECT_EQ(dropped["b"], 1);
}

TEST(PlannerTest, NoRebalanceWhileUnderProtectedOrCopying) {
  std::vector<SliceState> slices{Slice(1, {"a", "b"}), Slice(2, {"b", "a"}), Slice(3, {"a", "b"}),
                                 Slice(4, {"b"})};
  auto plan = Plan(slices, {"a", "b", "c"}, {});
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].kind, TaskKind::kReprotect);
  EXPECT_EQ(plan[0].target, "c");
  slices[3].building = {"c"};
  slices[3].building_sources = {"b"};
  EXPECT_TRUE(Plan(slices, {"a", "b", "c"}, {}).empty());
}

// A table an online DDL is changing (frozen) is neither re-protected nor
// moved, but its replicas count toward the nodes' load.
TEST(PlannerTest, FrozenSlicesAreLeftAloneButCounted) {
  std::vector<SliceState> slices{Slice(1, {"a"}), Slice(2, {"a", "b"}), Slice(3, {"a", "b"}), Slice(4, {"a", "b"})};
  for (SliceState& s : slices) s.frozen = true;
  EXPECT_TRUE(Plan(slices, {"a", "b", "c"}, {}).empty());
  // A movable slice of another table: c is the least loaded, a the most.
  SliceState other = Slice(5, {"a", "b"});
  other.table_id = 11;
  slices.push_back(other);
  auto plan = Plan(slices, {"a", "b", "c"}, {});
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].slice_id, 5u);
  EXPECT_EQ(plan[0].target, "c");
}

}  // namespace
}  // namespace shale::rebalancer

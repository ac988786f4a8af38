#include "src/exec/external_sort.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <random>

#include "src/common/errors.h"
#include "src/common/testing/temp_dir.h"
#include "src/exec/memory_budget.h"

namespace shale::exec {
namespace {

bool IntLess(const Row& a, const Row& b) { return a[0].as_int() < b[0].as_int(); }

size_t FilesIn(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) return 0;
  size_t n = 0;
  for (auto it = std::filesystem::directory_iterator(dir, ec); it != std::filesystem::directory_iterator(); ++it) ++n;
  return n;
}

// Sorts `n` rows with keys in [0, key_range) under `limit` and checks the
// order, stability (the payload counts up within a key) and that every row
// comes back once.
void SortAndCheck(uint64_t n, int64_t key_range, uint64_t limit, uint64_t* runs, uint64_t* passes,
                  uint64_t* peak) {
  shale::testing::TempDir dir;
  MemoryBudget budget(limit);
  std::mt19937_64 rng(42);
  std::vector<std::pair<int64_t, int64_t>> expected;
  {
    ExternalSorter sorter(IntLess, &budget, dir.path() + "/tmp");
    for (uint64_t i = 0; i < n; ++i) {
      int64_t k = static_cast<int64_t>(rng() % key_range);
      expected.emplace_back(k, static_cast<int64_t>(i));
      Row row{Value::Int(k), Value::Int(static_cast<int64_t>(i)), Value::String(std::string(40, 'x'))};
      ASSERT_TRUE(sorter.Add({Value::Int(k)}, std::move(row)).ok());
    }
    ASSERT_TRUE(sorter.Finish().ok());
    // Run files are unlinked when made: nothing is left to see.
    EXPECT_EQ(FilesIn(dir.path() + "/tmp"), 0u);
    std::stable_sort(expected.begin(), expected.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    Row row;
    for (uint64_t i = 0; i < n; ++i) {
      Result<bool> more = sorter.Next(&row);
      ASSERT_TRUE(more.ok()) << more.status().ToString();
      ASSERT_TRUE(*more) << "row " << i;
      ASSERT_EQ(row[0].as_int(), expected[i].first) << "row " << i;
      ASSERT_EQ(row[1].as_int(), expected[i].second) << "row " << i;
      ASSERT_EQ(row[2].as_string().size(), 40u);
    }
    Result<bool> end = sorter.Next(&row);
    ASSERT_TRUE(end.ok());
    EXPECT_FALSE(*end);
    *runs = sorter.runs_written();
    *passes = sorter.merge_passes();
  }
  *peak = budget.peak();
  EXPECT_EQ(budget.used(), 0u);  // the sorter gave everything back
}

TEST(ExternalSortTest, InMemoryWithoutLimit) {
  uint64_t runs = 0, passes = 0, peak = 0;
  SortAndCheck(10000, 100, 0, &runs, &passes, &peak);
  EXPECT_EQ(runs, 0u);
  EXPECT_EQ(passes, 0u);
}

TEST(ExternalSortTest, SpillsRunsAndMergesThemStably) {
  uint64_t runs = 0, passes = 0, peak = 0;
  const uint64_t limit = 1 << 20;
  SortAndCheck(20000, 50, limit, &runs, &passes, &peak);
  EXPECT_GT(runs, 1u);
  EXPECT_LT(runs, ExternalSorter::kMaxFanIn);
  EXPECT_EQ(passes, 1u);
  // Over the limit by at most one row.
  EXPECT_LE(peak, limit + 1024);
}

TEST(ExternalSortTest, ManyRunsMergeInSeveralPasses) {
  uint64_t runs = 0, passes = 0, peak = 0;
  // The budget is below the minimum run, so each run holds ~kMinRunBytes.
  SortAndCheck(100000, 1000000, 1 << 10, &runs, &passes, &peak);
  EXPECT_GT(runs, ExternalSorter::kMaxFanIn);
  EXPECT_GT(passes, 1u);
  EXPECT_LE(peak, ExternalSorter::kMinRunBytes + 1024);
}

TEST(ExternalSortTest, DestroyedMidwayReleasesMemoryAndFiles) {
  shale::testing::TempDir dir;
  MemoryBudget budget(128 << 10);
  {
    ExternalSorter sorter(IntLess, &budget, dir.path());
    for (int64_t i = 0; i < 20000; ++i) {
      ASSERT_TRUE(sorter.Add({Value::Int(-i)}, Row{Value::Int(i)}).ok());
    }
    ASSERT_TRUE(sorter.Finish().ok());
    Row row;
    ASSERT_TRUE(*sorter.Next(&row));
    EXPECT_EQ(row[0].as_int(), 19999);
    EXPECT_GT(sorter.runs_written(), 0u);
    EXPECT_GT(budget.used(), 0u);
  }
  EXPECT_EQ(budget.used(), 0u);
  EXPECT_EQ(FilesIn(dir.path()), 0u);
}

TEST(ExternalSortTest, UnwritableSpillDirIsError1026) {
  shale::testing::TempDir dir;
  std::string file = dir.Write("not-a-dir", "x");
  MemoryBudget budget(1);
  ExternalSorter sorter(IntLess, &budget, file);
  Status st;
  for (int64_t i = 0; i < 20000 && st.ok(); ++i) st = sorter.Add({Value::Int(i)}, Row{Value::Int(i)});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.mysql_code(), static_cast<uint16_t>(kErrorOnWrite));
}

TEST(MemoryBudgetTest, ReservationsShareTheLimitAndGiveBack) {
  MemoryBudget budget(1000);
  {
    MemoryReservation a(&budget);
    MemoryReservation b(&budget);
    EXPECT_TRUE(a.TryGrow(600));
    EXPECT_FALSE(b.TryGrow(600));
    Status st = b.Grow(600, "#sql-hash-join");
    EXPECT_EQ(st.mysql_code(), static_cast<uint16_t>(kRecordFileFull));
    EXPECT_NE(st.ToString().find("#sql-hash-join"), std::string::npos);
    EXPECT_TRUE(b.TryGrow(400));
    EXPECT_EQ(budget.used(), 1000u);
  }
  EXPECT_EQ(budget.used(), 0u);
  EXPECT_EQ(budget.peak(), 1000u);
  MemoryBudget unlimited(0);
  MemoryReservation c(&unlimited);
  EXPECT_TRUE(c.TryGrow(1ull << 40));
}

}  // namespace
}  // namespace shale::exec

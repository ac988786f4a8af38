// The statistics sketches against exact counts (issue "Sierra's cost-based
// planner", "Verified by": estimates against the truth on skewed data,
// after merges and deletes). Every input is generated from a fixed seed, so
// every figure below is the same on every run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "planner/stats/distinct_sketch.h"
#include "planner/stats/hotlist.h"
#include "planner/stats/index_statistics.h"
#include "planner/stats/quantile_sketch.h"

namespace shale::planner::stats {
namespace {

// Big-endian bytes of `v`: ordered as the numbers are (a memcomparable key).
std::string Key(uint64_t v) {
  std::string out(8, '\0');
  for (int i = 7; i >= 0; --i, v >>= 8) out[static_cast<size_t>(i)] = static_cast<char>(v & 0xff);
  return out;
}

// Draws from {0, ..., n - 1} with P(i) proportional to 1 / (i + 1)^s.
class Zipf {
 public:
  Zipf(uint64_t n, double s, uint64_t seed) : rng_(seed) {
    cdf_.reserve(n);
    double sum = 0;
    for (uint64_t i = 0; i < n; ++i) cdf_.push_back(sum += 1.0 / std::pow(static_cast<double>(i + 1), s));
    for (double& c : cdf_) c /= sum;
  }
  uint64_t Next() {
    const double u = std::uniform_real_distribution<double>(0, 1)(rng_);
    return static_cast<uint64_t>(std::lower_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin());
  }

 private:
  std::mt19937_64 rng_;
  std::vector<double> cdf_;
};

double RelativeError(double estimate, double truth) { return std::abs(estimate - truth) / truth; }

TEST(DistinctSketchTest, EstimatesDistinctCountsFromOneToAMillion) {
  DistinctSketch empty;
  EXPECT_EQ(empty.Estimate(), 0.0);
  EXPECT_TRUE(empty.empty());
  for (uint64_t n : {1u, 2u, 10u, 100u, 1000u, 5000u, 20000u, 100000u, 1000000u}) {
    DistinctSketch s;
    for (uint64_t i = 0; i < n; ++i) {
      s.Add(Key(i * 7919));
      if (i % 3 == 0) s.Add(Key(i * 7919));  // duplicates change nothing
    }
    // Within 5% (three standard errors of 1.6%; over 20 other seeds the
    // worst was 4.2%), and within one for the smallest counts.
    const double truth = static_cast<double>(n);
    EXPECT_NEAR(s.Estimate(), truth, std::max(1.0, 0.05 * truth)) << n;
  }
}

TEST(DistinctSketchTest, MergedPartsAreTheSketchOfTheWhole) {
  constexpr uint64_t kValues = 300000;
  DistinctSketch whole;
  std::vector<DistinctSketch> parts(8);
  std::mt19937_64 rng(7);
  for (uint64_t i = 0; i < kValues; ++i) {
    const std::string v = Key(i);
    whole.Add(v);
    // Each value lands in one or two parts: the parts overlap.
    parts[rng() % 8].Add(v);
    if (i % 4 == 0) parts[rng() % 8].Add(v);
  }
  DistinctSketch merged;
  for (size_t i = parts.size(); i-- > 0;) merged.Merge(parts[i]);
  EXPECT_TRUE(merged == whole);
  EXPECT_LE(RelativeError(merged.Estimate(), kValues), 0.05) << merged.Estimate();
}

TEST(DistinctSketchTest, SerializesExactlyAndRefusesOtherBytes) {
  DistinctSketch s;
  for (uint64_t i = 0; i < 5000; ++i) s.Add(Key(i));
  auto back = DistinctSketch::Parse(s.Serialize());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(*back == s);
  EXPECT_EQ(back->Estimate(), s.Estimate());
  EXPECT_TRUE(DistinctSketch::Parse("").status().code() == StatusCode::kInvalidArgument);
  std::string truncated = s.Serialize();
  truncated.pop_back();
  EXPECT_TRUE(DistinctSketch::Parse(truncated).status().code() == StatusCode::kInvalidArgument);
  std::string bad_register = s.Serialize();
  bad_register[10] = static_cast<char>(200);
  EXPECT_TRUE(DistinctSketch::Parse(bad_register).status().code() == StatusCode::kInvalidArgument);
}

// The largest difference between the sketch's rank and the true rank, as a
// share of the items, over 99 evenly spaced values of the sorted data.
double MaxRankError(const QuantileSketch& s, std::vector<std::string> data) {
  std::sort(data.begin(), data.end());
  double worst = 0;
  for (int p = 1; p < 100; ++p) {
    const std::string& v = data[data.size() * static_cast<size_t>(p) / 100];
    const double truth = static_cast<double>(std::lower_bound(data.begin(), data.end(), v) - data.begin());
    worst = std::max(worst, std::abs(s.Rank(v) - truth) / static_cast<double>(data.size()));
  }
  return worst;
}

TEST(QuantileSketchTest, RanksOfSkewedDataAreWithinTwoPercent) {
  Zipf zipf(1000000, 0.8, 11);
  QuantileSketch s;
  std::vector<std::string> data;
  for (int i = 0; i < 500000; ++i) {
    data.push_back(Key(zipf.Next() * 2654435761u % 1000003));
    s.Add(data.back());
  }
  EXPECT_EQ(s.count(), data.size());
  EXPECT_LT(s.retained(), 2000u) << "O(k log(n/k)) items, not the data";
  EXPECT_LE(MaxRankError(s, data), 0.02);
  // A range's share and a median from the same sketch.
  std::vector<std::string> sorted = data;
  std::sort(sorted.begin(), sorted.end());
  const std::string& low = sorted[sorted.size() / 4];
  const std::string& high = sorted[sorted.size() * 3 / 4];
  const double truth = static_cast<double>(std::lower_bound(sorted.begin(), sorted.end(), high) -
                                           std::lower_bound(sorted.begin(), sorted.end(), low)) /
                       static_cast<double>(sorted.size());
  EXPECT_NEAR(s.FractionBetween(low, high), truth, 0.03);
  const std::string median = s.Quantile(0.5);
  const double median_rank =
      static_cast<double>(std::lower_bound(sorted.begin(), sorted.end(), median) - sorted.begin()) /
      static_cast<double>(sorted.size());
  EXPECT_NEAR(median_rank, 0.5, 0.03);
}

TEST(QuantileSketchTest, MergedSketchesOfPartsRankTheWhole) {
  std::vector<QuantileSketch> parts;
  for (uint64_t i = 0; i < 8; ++i) parts.emplace_back(QuantileSketch::kDefaultK, i + 1);
  std::vector<std::string> data;
  std::mt19937_64 rng(3);
  for (int i = 0; i < 400000; ++i) {
    // Each part holds a different slice of the value range, skewed.
    const uint64_t part = rng() % 8;
    data.push_back(Key(part * 1000000 + (rng() % 1000) * (rng() % 1000)));
    parts[part].Add(data.back());
  }
  QuantileSketch merged;
  for (const QuantileSketch& p : parts) merged.Merge(p);
  EXPECT_EQ(merged.count(), data.size());
  EXPECT_LE(MaxRankError(merged, data), 0.02);
}

TEST(QuantileSketchTest, SerializesExactlyAndRefusesOtherBytes) {
  QuantileSketch s;
  EXPECT_EQ(s.Quantile(0.5), "");
  for (uint64_t i = 0; i < 10000; ++i) s.Add(Key(i * 31 % 10007));
  auto back = QuantileSketch::Parse(s.Serialize());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->Serialize(), s.Serialize());
  EXPECT_EQ(back->Rank(Key(5000)), s.Rank(Key(5000)));
  // The same calls on both give the same sketch (the coin flips are seeded).
  s.Add(Key(1));
  back->Add(Key(1));
  EXPECT_EQ(back->Serialize(), s.Serialize());
  EXPECT_TRUE(QuantileSketch::Parse("x").status().code() == StatusCode::kInvalidArgument);
  std::string truncated = s.Serialize();
  truncated.resize(truncated.size() - 3);
  EXPECT_TRUE(QuantileSketch::Parse(truncated).status().code() == StatusCode::kInvalidArgument);
}

TEST(HotlistTest, ListsEveryValueMoreFrequentThanItsErrorWithBoundedCounts) {
  Zipf zipf(100000, 1.1, 5);
  Hotlist h;
  std::map<std::string, uint64_t> truth;
  constexpr uint64_t kDraws = 1000000;
  for (uint64_t i = 0; i < kDraws; ++i) {
    const std::string v = Key(zipf.Next());
    h.Add(v);
    ++truth[v];
  }
  EXPECT_EQ(h.total(), kDraws);
  EXPECT_LE(h.error(), kDraws / (h.capacity() + 1));
  EXPECT_LE(h.Top().size(), h.capacity());
  size_t listed = 0;
  for (const auto& [v, count] : truth) {
    const uint64_t c = h.Count(v);
    EXPECT_LE(c, count);
    EXPECT_LE(count, c + h.error());
    if (count > h.error()) {
      EXPECT_GT(c, 0u) << "a value more frequent than the error bound is listed";
      ++listed;
    }
  }
  EXPECT_GT(listed, 5u);
  // The hottest value first, and its count within a factor of 2 (here far
  // closer).
  const auto top = h.Top();
  ASSERT_FALSE(top.empty());
  EXPECT_EQ(top[0].first, Key(0));
  EXPECT_GE(2 * top[0].second, truth[Key(0)]);
}

TEST(HotlistTest, MergedPartsKeepTheBoundsAndDeletesLowerCounts) {
  Zipf zipf(50000, 1.0, 9);
  std::vector<Hotlist> parts(4);
  std::map<std::string, uint64_t> truth;
  uint64_t n = 0;
  for (int i = 0; i < 400000; ++i) {
    const std::string v = Key(zipf.Next());
    parts[static_cast<size_t>(i) % 4].Add(v);
    ++truth[v];
    ++n;
  }
  Hotlist merged;
  for (const Hotlist& p : parts) merged.Merge(p);
  EXPECT_EQ(merged.total(), n);
  EXPECT_LE(merged.error(), n / (merged.capacity() + 1));
  for (const auto& [v, count] : truth) {
    EXPECT_LE(merged.Count(v), count);
    EXPECT_LE(count, merged.Count(v) + merged.error());
  }
  // Deletes: a listed value's counter goes down, never below zero.
  const std::string hot = Key(0);
  const uint64_t before = merged.Count(hot);
  ASSERT_GT(before, 100u);
  merged.Remove(hot, 100);
  EXPECT_EQ(merged.Count(hot), before - 100);
  EXPECT_EQ(merged.total(), n - 100);
  merged.Remove(hot, before);
  EXPECT_EQ(merged.Count(hot), 0u);
  auto back = Hotlist::Parse(merged.Serialize());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->Serialize(), merged.Serialize());
  EXPECT_TRUE(Hotlist::Parse("").status().code() == StatusCode::kInvalidArgument);
}


// The skewed table: 200,000 rows; a is X for 90% of the rows, else
// one of 1,000 cold values (20 rows each on average); b likewise (Y),
// independently; c uniform over
// 1,000,000 values; d = a (perfectly correlated). Built as 8 slices whose
// statistics are merged.
struct SkewedTable {
  static constexpr uint64_t kRows = 200000;
  static constexpr uint64_t kHot = 1000000;  // X and Y
  struct Row {
    uint64_t a, b, c;
  };
  std::vector<Row> rows;
  IndexStatistics on_a{1}, on_b{1}, on_c{1}, on_ab{2}, on_ad{2};

  SkewedTable() {
    std::mt19937_64 rng(42);
    auto skewed = [&] { return rng() % 10 < 9 ? kHot : rng() % 1000; };
    for (uint64_t i = 0; i < kRows; ++i) {
      const uint64_t a = skewed();
      const uint64_t b = skewed();
      rows.push_back(Row{a, b, rng() % 1000000});
    }
    std::vector<IndexStatistics> a(8, IndexStatistics(1)), b(8, IndexStatistics(1)), c(8, IndexStatistics(1)),
        ab(8, IndexStatistics(2)), ad(8, IndexStatistics(2));
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      const size_t slice = i % 8;
      a[slice].Add({Key(r.a)});
      b[slice].Add({Key(r.b)});
      c[slice].Add({Key(r.c)});
      ab[slice].Add({Key(r.a), Key(r.b)});
      ad[slice].Add({Key(r.a), Key(r.a)});
    }
    for (size_t i = 0; i < 8; ++i) {
      EXPECT_TRUE(on_a.Merge(a[i]).ok());
      EXPECT_TRUE(on_b.Merge(b[i]).ok());
      EXPECT_TRUE(on_c.Merge(c[i]).ok());
      EXPECT_TRUE(on_ab.Merge(ab[i]).ok());
      EXPECT_TRUE(on_ad.Merge(ad[i]).ok());
    }
  }
  template <typename Pred>
  double Count(Pred pred) const {
    return static_cast<double>(std::count_if(rows.begin(), rows.end(), pred));
  }
};

bool WithinTwice(double estimate, double truth) { return estimate <= 2 * truth && truth <= 2 * estimate; }

TEST(IndexStatisticsTest, EqualityOnHotAndColdValuesIsWithinTwiceTheTruth) {
  SkewedTable t;
  EXPECT_EQ(t.on_a.rows(), SkewedTable::kRows);
  const double hot = t.Count([](const auto& r) { return r.a == SkewedTable::kHot; });
  EXPECT_TRUE(WithinTwice(t.on_a.EqualRows({Key(SkewedTable::kHot)}), hot)) << t.on_a.EqualRows({Key(SkewedTable::kHot)});
  EXPECT_NEAR(t.on_a.Distinct(1), 1001, 1001 * 0.05);
  // Cold values: the estimate is their average; a value whose own count
  // strays past twice or half of it cannot be told apart without storing
  // it. At least 95% of them are within twice.
  std::map<uint64_t, double> cold;
  for (const auto& r : t.rows) {
    if (r.a != SkewedTable::kHot) ++cold[r.a];
  }
  size_t within = 0;
  for (const auto& [v, truth] : cold) within += WithinTwice(t.on_a.EqualRows({Key(v)}), truth) ? 1 : 0;
  EXPECT_GE(within, cold.size() * 95 / 100) << within << " of " << cold.size();
  // A value not there at all: at most an average cold value.
  EXPECT_LE(t.on_a.EqualRows({Key(5000000)}), 30.0);
  // IN lists: the sum of their values.
  const double in_truth =
      t.Count([](const auto& r) { return r.a == SkewedTable::kHot || r.a == 7 || r.a == 8; });
  EXPECT_TRUE(WithinTwice(t.on_a.InRows({Key(SkewedTable::kHot), Key(7), Key(8), Key(7)}), in_truth));
}

TEST(IndexStatisticsTest, RangesAndConjunctionsAreWithinTwiceTheTruth) {
  SkewedTable t;
  for (uint64_t width : {100000u, 250000u, 500000u}) {
    const uint64_t low = 300000;
    const double truth = t.Count([&](const auto& r) { return r.c >= low && r.c < low + width; });
    EXPECT_TRUE(WithinTwice(t.on_c.RangeRows(Key(low), Key(low + width)), truth)) << width;
    EXPECT_NEAR(t.on_c.RangeRows(Key(low), Key(low + width)), truth, 0.02 * SkewedTable::kRows) << width;
  }
  EXPECT_NEAR(t.on_c.RangeRows(std::nullopt, std::nullopt), SkewedTable::kRows, 1.0);
  // a = X AND b = <cold> and the other way round, from the two one-column
  // indexes: the question that needs statistics to pick an index.
  const double n = SkewedTable::kRows;
  auto both = [&](uint64_t a, uint64_t b) {
    return n * ConjunctionSelectivity({t.on_a.EqualRows({Key(a)}) / n, t.on_b.EqualRows({Key(b)}) / n});
  };
  const uint64_t hot = SkewedTable::kHot;
  const double hot_hot = t.Count([&](const auto& r) { return r.a == hot && r.b == hot; });
  EXPECT_TRUE(WithinTwice(both(hot, hot), hot_hot)) << both(hot, hot) << " vs " << hot_hot;
  // a = <cold> AND b = Y, and a = X AND b = <cold>, for every cold value:
  // as for one column, at least 95% within twice (the rest are cold values
  // whose own count strays from the average).
  std::map<uint64_t, double> cold_a_hot_b, hot_a_cold_b;
  for (const auto& r : t.rows) {
    if (r.a != hot && r.b == hot) ++cold_a_hot_b[r.a];
    if (r.a == hot && r.b != hot) ++hot_a_cold_b[r.b];
  }
  size_t within = 0, cases = 0;
  for (const auto& [v, truth] : cold_a_hot_b) within += WithinTwice(both(v, hot), truth) ? 1 : 0;
  for (const auto& [v, truth] : hot_a_cold_b) within += WithinTwice(both(hot, v), truth) ? 1 : 0;
  cases = cold_a_hot_b.size() + hot_a_cold_b.size();
  EXPECT_GE(within, cases * 95 / 100) << within << " of " << cases;
  // Which single-column index examines fewer rows is the one on the
  // column whose value is cold.
  EXPECT_LT(t.on_a.EqualRows({Key(17)}), t.on_b.EqualRows({Key(hot)}));
  EXPECT_LT(t.on_b.EqualRows({Key(17)}), t.on_a.EqualRows({Key(hot)}));
  // A two-column index answers its prefix directly, correlated columns
  // included (d = a: backoff alone would be far below the truth for a cold
  // value).
  EXPECT_TRUE(WithinTwice(t.on_ab.EqualRows({Key(SkewedTable::kHot), Key(SkewedTable::kHot)}), hot_hot));
  const double cold_d = t.Count([](const auto& r) { return r.a == 17; });
  EXPECT_TRUE(WithinTwice(t.on_ad.EqualRows({Key(17), Key(17)}), cold_d))
      << t.on_ad.EqualRows({Key(17), Key(17)}) << " vs " << cold_d;
}

TEST(IndexStatisticsTest, DeletesNullsAndMismatchedMerges) {
  IndexStatistics s(2);
  for (uint64_t i = 0; i < 1000; ++i) s.Add({i % 10 == 0 ? std::nullopt : std::optional<std::string>(Key(i % 5)), Key(i)});
  EXPECT_EQ(s.rows(), 1000u);
  EXPECT_EQ(s.null_rows(), 100u);
  // NULLs are in no range and equal nothing.
  EXPECT_NEAR(s.RangeRows(std::nullopt, std::nullopt), 900.0, 1.0);
  EXPECT_NEAR(s.EqualRows({Key(1)}), 200.0, 1.0);
  for (uint64_t i = 0; i < 1000; i += 5) s.Remove({std::optional<std::string>(Key(1)), Key(i)});
  EXPECT_EQ(s.rows(), 800u);
  EXPECT_EQ(s.deletes(), 200u);
  EXPECT_NEAR(s.EqualRows({Key(1)}), 0.0, 1.0);
  IndexStatistics one(1);
  EXPECT_EQ(s.Merge(one).code(), StatusCode::kInvalidArgument);
}
}  // namespace
}  // namespace shale::planner::stats

#include "src/exec/sorted_index_entries.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "src/common/value.h"

namespace shale::exec {
namespace {

// An index entry key as index builds make it: encoded values, then the
// encoded primary key.
std::string EntryKey(const std::vector<Value>& values, int64_t pk, size_t* values_size) {
  std::string key;
  for (const Value& v : values) AppendKey(v, &key);
  *values_size = key.size();
  AppendKey(Value::Int(pk), &key);
  return key;
}

TEST(SortedIndexEntriesTest, SortsLikeAMapOfTheKeys) {
  std::mt19937_64 rng(7);
  SortedIndexEntries entries;
  std::map<std::string, std::string> model;
  for (int64_t pk = 0; pk < 20000; ++pk) {
    // Strings of varied lengths, some sharing 8-byte prefixes, some empty,
    // some holding 0x00 bytes (escaped): the prefix shortcut must agree
    // with the full comparison.
    std::string s(rng() % 12, 'a');
    for (char& c : s) c = static_cast<char>("ab\0"[rng() % 3]);
    size_t values_size = 0;
    std::string key = EntryKey({Value::String(s)}, pk, &values_size);
    std::string value = "pk" + std::to_string(pk);
    entries.Add(key, values_size, false, value, "", static_cast<uint64_t>(pk));
    model[key] = value;
  }
  entries.Sort();
  ASSERT_EQ(entries.size(), model.size());
  size_t i = 0;
  for (const auto& [key, value] : model) {
    EXPECT_EQ(entries.key(i), key) << i;
    EXPECT_EQ(entries.value(i), value) << i;
    ++i;
  }
  EXPECT_FALSE(entries.FirstDuplicate().has_value());
}

TEST(SortedIndexEntriesTest, KeysThatArePrefixesOfOthersSortFirst) {
  SortedIndexEntries entries;
  for (std::string key : {std::string("abcdefghij"), std::string("abc"), std::string("abcdefgh"),
                          std::string("abcdefgh\0", 9), std::string(""), std::string("b")}) {
    entries.Add(key, 0, false, "", "", 0);
  }
  entries.Sort();
  std::vector<std::string> got;
  for (size_t i = 0; i < entries.size(); ++i) got.emplace_back(entries.key(i));
  std::vector<std::string> want = {"", "abc", "abcdefgh", std::string("abcdefgh\0", 9), "abcdefghij", "b"};
  EXPECT_EQ(got, want);
}

// A UNIQUE build names the row a one-by-one check in scan order stops at:
// the first row whose values an earlier row had, wherever the sort put it.
TEST(SortedIndexEntriesTest, FirstDuplicateInScanOrderAcrossASortedRun) {
  SortedIndexEntries entries;
  // Scan order (order = position): values 50, 10, 30, 10, 50, 30. One by
  // one, the first repeat is at order 3 (10 again); 50's repeat (order 4)
  // and 30's (order 5) come later in scan order.
  const int64_t values[] = {50, 10, 30, 10, 50, 30};
  for (uint64_t order = 0; order < 6; ++order) {
    size_t values_size = 0;
    std::string key = EntryKey({Value::Int(values[order])}, static_cast<int64_t>(100 - order), &values_size);
    std::string shown;
    EncodeRow({Value::Int(values[order])}, &shown);
    entries.Add(key, values_size, true, "pk", shown, order);
  }
  entries.Sort();
  auto dup = entries.FirstDuplicate();
  ASSERT_TRUE(dup.has_value());
  EXPECT_EQ(dup->order, 3u);
  Row shown;
  ASSERT_TRUE(DecodeRow(dup->shown, &shown).ok());
  ASSERT_EQ(shown.size(), 1u);
  EXPECT_EQ(shown[0].as_int(), 10);
}

TEST(SortedIndexEntriesTest, TheGroupsSecondOrderCountsNotItsFirst) {
  SortedIndexEntries entries;
  // Value 1 at orders 0 and 9; value 2 at orders 5 and 6: the check stops
  // at order 6 (value 2), not at value 1's group that sorts first.
  auto add = [&](int64_t v, uint64_t order) {
    size_t values_size = 0;
    std::string key = EntryKey({Value::Int(v)}, static_cast<int64_t>(order), &values_size);
    std::string shown;
    EncodeRow({Value::Int(v)}, &shown);
    entries.Add(key, values_size, true, "", shown, order);
  };
  add(1, 0);
  add(1, 9);
  add(2, 6);
  add(2, 5);
  add(3, 7);
  entries.Sort();
  auto dup = entries.FirstDuplicate();
  ASSERT_TRUE(dup.has_value());
  EXPECT_EQ(dup->order, 6u);
}

// Entries that are no unique candidates (NULL among the values, or a
// non-unique index) never count as duplicates, even with equal values.
TEST(SortedIndexEntriesTest, NonCandidatesAreNeverDuplicates) {
  SortedIndexEntries entries;
  for (uint64_t order = 0; order < 4; ++order) {
    size_t values_size = 0;
    std::string key = EntryKey({Value::Null()}, static_cast<int64_t>(order), &values_size);
    entries.Add(key, values_size, false, "", "", order);
  }
  size_t values_size = 0;
  std::string key = EntryKey({Value::Int(4)}, 10, &values_size);
  entries.Add(key, values_size, true, "", "x", 4);
  key = EntryKey({Value::Int(5)}, 11, &values_size);
  entries.Add(key, values_size, true, "", "y", 5);
  entries.Sort();
  EXPECT_FALSE(entries.FirstDuplicate().has_value());
}

// Many groups in a large shuffled run: the answer equals a one-by-one
// check with a set, as the build did before it sorted.
TEST(SortedIndexEntriesTest, AgreesWithAOneByOneCheck) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    SortedIndexEntries entries;
    std::map<int64_t, uint64_t> seen;
    std::optional<uint64_t> want;
    const int64_t range = 5000 + static_cast<int64_t>(rng() % 20000);
    for (uint64_t order = 0; order < 3000; ++order) {
      const int64_t v = static_cast<int64_t>(rng() % static_cast<uint64_t>(range));
      if (!want && !seen.emplace(v, order).second) want = order;
      size_t values_size = 0;
      std::string key = EntryKey({Value::Int(v)}, static_cast<int64_t>(order), &values_size);
      std::string shown;
      EncodeRow({Value::Int(v)}, &shown);
      entries.Add(key, values_size, true, "", shown, order);
    }
    entries.Sort();
    auto dup = entries.FirstDuplicate();
    ASSERT_EQ(dup.has_value(), want.has_value()) << seed;
    if (want) {
      EXPECT_EQ(dup->order, *want) << seed;
    }
  }
}

}  // namespace
}  // namespace shale::exec

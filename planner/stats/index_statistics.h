// IndexStatistics: what the planner knows of one representation's keys (a
// table's primary key or a secondary index), and the row estimates it
// derives from them (docs/planner.md "Statistics").
//
// Kept per key prefix i (the first i + 1 key columns): a distinct count
// (DistinctSketch) and a hotlist (Hotlist) of the prefix's values; for the
// leading column also its quantiles (QuantileSketch, non-NULL values) and
// how many rows hold NULL there. Prefix values are identified by an
// injective encoding of their columns (a NULL flag and a length per
// column); the quantiles order the leading column's own bytes, which the
// caller gives in the memcomparable key encoding.
//
// Contract:
//  - Add(key) once per row, Remove(key) once per deleted row; rows() and
//    the NULL count are exact. Deletes lower the hotlists only (the sketches
//    cannot forget): deletes() says how many happened since the build, for
//    the owner to rebuild.
//  - Merge of the statistics of disjoint parts (slices, nodes) with the
//    same number of key columns gives the statistics of the whole.
//  - Estimates are row counts (doubles, >= 0): an equality on a value the
//    hotlist surely holds (its counter at least the error bound) is its
//    count; on any other value the average of the others, never more than
//    the hotlist's error bound; a range
//    from the quantiles; conjunctions of predicates on different columns
//    by exponential backoff (ConjunctionSelectivity).
//
// Thread-safety: none.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "planner/stats/distinct_sketch.h"
#include "planner/stats/hotlist.h"
#include "planner/stats/quantile_sketch.h"
#include "shale/status.h"

namespace shale::planner::stats {

// One row's key columns, each in the memcomparable key encoding; nullopt
// for NULL.
using KeyColumns = std::vector<std::optional<std::string>>;

class IndexStatistics {
 public:
  // REQUIRES: key_columns >= 1.
  explicit IndexStatistics(size_t key_columns);

  // REQUIRES: key.size() == key_columns().
  void Add(const KeyColumns& key);
  void Remove(const KeyColumns& key);
  // InvalidArgument when `other` has another number of key columns.
  Status Merge(const IndexStatistics& other);

  size_t key_columns() const { return prefixes_.size(); }
  uint64_t rows() const { return rows_; }
  uint64_t deletes() const { return deletes_; }
  uint64_t null_rows() const { return nulls_; }
  // Estimated distinct values of the first `columns` key columns.
  double Distinct(size_t columns) const;

  // Estimated rows whose first values.size() key columns equal `values`
  // (no NULLs: = never matches NULL). REQUIRES: 1 <= values.size() <=
  // key_columns().
  double EqualRows(const std::vector<std::string>& values) const;
  // Estimated rows whose leading column is in [low, high); an absent bound
  // is open. NULLs are in no range.
  double RangeRows(const std::optional<std::string>& low, const std::optional<std::string>& high) const;
  // Estimated rows whose leading column is one of `values` (duplicates
  // counted once).
  double InRows(std::vector<std::string> values) const;

 private:
  struct Prefix {
    DistinctSketch distinct;
    Hotlist hot;
  };
  // The injective encoding of the first `columns` key columns.
  static std::string PrefixValue(const KeyColumns& key, size_t columns);
  static std::string PrefixValue(const std::vector<std::string>& values);
  double EqualRowsOf(size_t prefix, const std::string& value) const;

  std::vector<Prefix> prefixes_;
  QuantileSketch leading_;
  uint64_t rows_ = 0;
  uint64_t nulls_ = 0;
  uint64_t deletes_ = 0;
};

// The selectivity of a conjunction of predicates on different columns of
// one table, each with selectivity s[i] in [0, 1]: the smallest, times the
// next to the power 1/2, the next to 1/4, then 1/8 (exponential backoff:
// columns of one table are often correlated, and independence would
// multiply the estimate down to nothing).
double ConjunctionSelectivity(std::vector<double> s);

}  // namespace shale::planner::stats

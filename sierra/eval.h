// The reference interpreter of Sierra scalar expressions: the semantics every
// executor (interpreted now, JIT-compiled later) must match.
//
// SQL three-valued logic: comparisons with NULL yield NULL; AND/OR follow
// Kleene logic; a predicate passes a row only when it is true (not NULL).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <unordered_set>
#include <vector>

#include "shale/status.h"
#include "sierra/expr.h"
#include "src/common/value.h"

namespace shale::sierra {

// Evaluates `e` over `row` (the input row of the operator holding `e`).
// Errors: ER_DATA_OUT_OF_RANGE (1690) on BIGINT overflow.
Result<Value> Evaluate(const Expr& e, const Row& row);

// While alive (with `on`), a division or MOD by zero evaluated on this
// thread fails with ER_DIVISION_BY_ZERO (1365) instead of giving NULL with
// that warning: MySQL's strict sql_mode with ERROR_FOR_DIVISION_BY_ZERO, for
// INSERT, REPLACE and UPDATE (not IGNORE, not DELETE or SELECT).
class ScopedDivisionByZeroError {
 public:
  explicit ScopedDivisionByZeroError(bool on);
  ~ScopedDivisionByZeroError();
  ScopedDivisionByZeroError(const ScopedDivisionByZeroError&) = delete;
  ScopedDivisionByZeroError& operator=(const ScopedDivisionByZeroError&) = delete;

 private:
  bool previous_;
};

// Whether `v` counts as true in a WHERE clause (non-NULL and non-zero).
bool IsTrue(const Value& v);

// `v` converted to type `t` as CAST does: DECIMAL rounded to its scale (out
// of range: the type's largest value and warning 1264), DOUBLE, integers
// rounded, strings as text.
Result<Value> ConvertToType(const Value& v, const SqlType& t);

// The running state of one aggregate over the rows of one group: the
// reference semantics of aggregation. NULL arguments are skipped (except by
// COUNT(*) and ANY_VALUE); over no rows COUNT gives 0 and the others NULL.
class Accumulator {
 public:
  explicit Accumulator(const AggregateCall& call) : call_(&call) {}
  // Adds `row` (an input row of the aggregate operator).
  // Errors: ER_DATA_OUT_OF_RANGE (1690) when a SUM leaves BIGINT.
  Status Add(const Row& row);
  Value Result() const;

  // Partial aggregation (docs/cluster.md "Query path"): the slices compute
  // one Accumulator per group each, ship Partial(), and the coordinator
  // Merge()s the partials of every slice, in slice order, into one whose
  // Result() equals that of one Accumulator fed every row in that order.
  // Only for calls where that holds exactly: COUNT(*), COUNT, MIN, MAX,
  // and SUM/AVG with a DECIMAL result (an exact sum; a DOUBLE sum of
  // partial sums may differ in its last bits), none DISTINCT or with
  // several arguments.
  static bool Mergeable(const AggregateCall& call);
  // The state as kPartialWidth values: the row count and the running
  // value (the exact sum, the MIN/MAX so far; NULL when none).
  // REQUIRES: Mergeable(call).
  static constexpr size_t kPartialWidth = 2;
  void AppendPartial(Row* out) const;
  // Adds a partial state from `in` at `pos` (kPartialWidth values).
  // Errors: 1690 when merged DECIMAL sums leave the DECIMAL range (as Add);
  // InvalidArgument for values that are not a state of this call.
  Status Merge(const Row& in, size_t pos);

 private:
  const AggregateCall* call_;
  int64_t count_ = 0;
  bool has_value_ = false;  // SUM/MIN/MAX/ANY_VALUE: value_ holds something
  Value value_;
  Decimal exact_sum_;          // SUM/AVG of exact values
  double sum_ = 0;             // SUM/AVG of inexact values
  double mean_ = 0, m2_ = 0;   // STDDEV/VARIANCE: Welford's running mean and squares
  uint64_t bits_ = 0;          // BIT_AND/OR/XOR
  std::string text_;           // GROUP_CONCAT
  // GROUP_CONCAT with DISTINCT or ORDER BY: each row's sort keys (the ORDER
  // BY values, else the arguments) and text, joined in order at the end.
  std::vector<std::pair<Row, std::string>> pending_;
  bool cut_ = false;           // GROUP_CONCAT reached group_concat_max_len
  std::unordered_set<std::string> seen_;  // DISTINCT: encoded values
};

}  // namespace shale::sierra

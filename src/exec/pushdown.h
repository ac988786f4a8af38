// Push-down: a statement's filter, or its filter and partial aggregate, run
// where the slices are, so only the rows that pass or one partial row per
// group and slice travel between nodes (docs/cluster.md "Query path").
//
// Coordinator side: PushdownOf says what a physical operator may push and
// serializes it as a *fragment*, a Sierra logical plan
// (docs/formats/sierra-plan.md "Pushed fragments"):
//   Filter(Scan t)                      a filter over the rows of a slice
//   Aggregate([Filter](Scan t))         GROUP BY values and partial states
// The executor sends it with each remote slice's read
// (txn::DataRouter::ScanFiltered / AggregateSlice) and runs the same
// partial aggregation in-process for slices it reads itself
// (PartialAggregation), then merges the partials in slice order
// (PartialMerge), which gives exactly what one aggregation over every row
// in that order gives (sierra::Accumulator::Merge).
//
// Receiver side: CompileFragment checks the bytes (the table at the same
// definition version, the slice one of its primary representation's, only
// expressions PushableExpr allows, only mergeable aggregates) and returns
// the txn::RowFragment the slice service runs over the stored rows.
//
// What is not pushed (the rows travel as before): locking reads, scans in
// key order (merged or reversed, their row order feeds the result), index
// scans, DISTINCT aggregates, GROUP_CONCAT, STDDEV/VARIANCE, BIT_*,
// SUM/AVG of floating-point values, and expressions that depend on more
// than their arguments (RAND, UUID, user variables, subqueries, outer
// references). A remote slice a transaction has written is aggregated on
// the coordinator over its own view (the rows, overlaid by its writes).
//
// Thread-safety: pure functions; a RowFragment or PartialMerge is used by
// one thread.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "planner/physical.h"
#include "shale/status.h"
#include "sierra/eval.h"
#include "src/catalog/catalog.h"
#include "src/txn/data_router.h"

namespace shale::exec {

// Whether `e` gives the same value evaluated on any node: columns of the
// input row, constants, operators, and functions of their arguments alone.
bool PushableExpr(const sierra::Expr& e);

// What `op` pushes to the slices it reads.
struct Pushdown {
  enum class Kind { kNone, kFilter, kAggregate };
  Kind kind = Kind::kNone;
  const planner::PhysicalOperator* scan = nullptr;       // the kSliceScan read
  const planner::PhysicalOperator* filter = nullptr;     // the kFilter over it (null: none)
  const planner::PhysicalOperator* aggregate = nullptr;  // kAggregate: the kHashAggregate
  // "pushed: filter" / "pushed: filter, partial aggregate" (EXPLAIN).
  std::string Describe() const;
};
// kFilter over a kSliceScan: pushes the filter; kHashAggregate over
// [kFilter over] a kSliceScan: the filter and the partial aggregate. The
// scan must be unordered and not reversed; every expression PushableExpr;
// every aggregate sierra::Accumulator::Mergeable. (Locking reads are the
// executor's to exclude: they depend on the statement, not the plan.)
Pushdown PushdownOf(const planner::PhysicalOperator& op);
// The fragment `p` sends (plan.proto Operator bytes). REQUIRES: p.kind != kNone.
std::string SerializeFragment(const Pushdown& p);
// The fragment a batched lookup join sends with its keys: Filter(Scan
// table) with the inner side's own filter (null: none, a filter passing
// every row). REQUIRES: filter is null or PushableExpr.
std::string SerializeLookupFragment(const std::shared_ptr<const catalog::TableDef>& table,
                                    const sierra::ExprPtr& filter);

// Receiver side: the fragment in `bytes` for slice `slice`, against this
// node's catalog. Errors: InvalidArgument (not a fragment this node runs),
// 1412 (the table is at another definition version), 1047 (the slice is
// not the table's: the slice map changed).
Result<std::unique_ptr<txn::RowFragment>> CompileFragment(catalog::Catalog* catalog, const std::string& bytes,
                                                          storage::SliceId slice);

// One aggregation's groups, by encoded GROUP BY key forms, in order of
// first appearance; used for the partials of a slice and for the merge.
class GroupTable {
 public:
  GroupTable(const std::vector<sierra::ExprPtr>* group_by, const std::vector<sierra::AggregateCall>* aggregates)
      : group_by_(group_by), aggregates_(aggregates) {}
  // Adds an input row (filtered already).
  Status AddRow(const Row& row);
  // Adds a partial row (AppendPartials' form).
  Status MergePartial(std::string_view encoded);
  // One partial row per group, encoded, then clears the table.
  void TakePartials(std::vector<std::string>* out);
  // The final rows: GROUP BY values, then each aggregate's result. Without
  // GROUP BY there is one row even when no row was added.
  std::vector<Row> Results();
  size_t size() const { return groups_.size(); }
  // Bytes the groups hold (for the statement's memory budget).
  uint64_t bytes() const { return bytes_; }

 private:
  struct Group {
    Row keys;
    std::vector<sierra::Accumulator> accumulators;
  };
  Group* Find(const Row& keys, bool* added);

  const std::vector<sierra::ExprPtr>* group_by_;
  const std::vector<sierra::AggregateCall>* aggregates_;
  std::vector<Group> groups_;
  std::unordered_map<std::string, size_t> index_;
  uint64_t bytes_ = 0;
};

}  // namespace shale::exec

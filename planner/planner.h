// Planner: turns a Sierra logical plan into a physical plan.
//
// Today it has one rule with a real choice — access path selection for a
// Filter over a Scan of a table's primary representation:
//   - equality on every primary-key column  -> PointGet on the one slice
//     owning the key's distribution hash;
//   - range predicates on the leading primary-key column -> SliceScan of that
//     key range on every slice (rows are hash-distributed, so every slice
//     may hold keys of the range);
//   - otherwise a SliceScan of all keys.
//   - an IN list / OR of equalities on the next key column -> one point
//     range per value;
//   - LIMIT over ORDER BY over one table whose key order gives the sort ->
//     a scan in key order (slices merged) with no Sort (PlanOrderedLimit).
// The filter is always kept above the access path, so the access path only
// has to return a superset of the qualifying rows.
// Cost-based search (Cascades memo, statistics) arrives with the planner issue.
//
// Thread-safety: stateless.
#pragma once

#include <optional>

#include "planner/physical.h"
#include "shale/status.h"
#include "sierra/logical.h"

namespace shale::planner {

Result<PhysicalPtr> Plan(const sierra::LogicalOperator& logical);

// What the statement being planned may use beyond the defaults.
struct PlanOptions {
  // A join on the leading key columns (at least the distribution columns)
  // of the primary key or of a secondary index of a table ranked on
  // several nodes, with a filtered left side, is an index-lookup join (the
  // executor sends the keys in batches to the slices holding them:
  // docs/cluster.md "Query path") instead of a hash join moving the whole
  // table. The session sets it from shale_pushdown. Default: false.
  bool batched_lookups = false;
};
Result<PhysicalPtr> Plan(const sierra::LogicalOperator& logical, const PlanOptions& options);

// `v` as a key of a column of type `t` (what equality with `v` reads by
// key), or nullopt when key order cannot answer that equality (another type
// class, out of the column's range, NULL); then only a filter can.
std::optional<Value> KeyConstant(const Value& v, const SqlType& t);

}  // namespace shale::planner

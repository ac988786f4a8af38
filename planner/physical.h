// Physical plans: what the executor runs. The planner (planner/planner.h)
// chooses them from Sierra logical plans; each node says how its rows are
// obtained, including which slices of which representation are read.
//
// Operators (payload):
//   kValues     rows: literal rows
//   kPointGet   table, key, slice: one row by full primary key, from the one
//               slice that owns the key's distribution hash
//   kSliceScan  table, range, slices: rows of the primary representation in
//               `range` (encoded keys), from every listed slice
//   kIndexScan  table, index, range, slices: entries of secondary index
//               `index` in `range` (encoded index keys) from every listed
//               slice of that index, merged into index-key order; each
//               yields its row looked up in the primary representation
//               (`ranges`, `ordered`, `reverse`, `limit_hint`: see the
//               fields; ORDER BY ... LIMIT served in index order)
//   kFilter     predicate
//   kProject    exprs
//   kSort       sort_keys
//   kDistinct   (none)
//   kLimit      limit, offset
//   kInsert     table, insert_conflict, update_columns, exprs: inserts the
//               child's rows (sierra kInsert)
//   kUpdate     table, update_columns, exprs: updates the child's rows (full
//               table rows from an access path, possibly filtered, sorted,
//               limited), as sierra::LogicalKind::kUpdate
//   kDelete     table: deletes the child's rows
//   kHashAggregate group_by, aggregates: sierra kAggregate, with a hash
//               table of groups (materializes its input's groups)
//   kStreamAggregate group_by, aggregates: sierra kAggregate over input
//               that arrives grouped (an ordered scan whose key starts
//               with the GROUP BY columns): one group at a time, no hash
//               table
//   kNestedLoopJoin join_kind, predicate: sierra kJoin; materializes the
//               right input once and scans it per left row
//   kHashJoin   join_kind, predicate, hash_keys: as kNestedLoopJoin, but the
//               right rows are hashed on their hash_keys[i].second values
//               and each left row meets only the rows whose keys equal its
//               hash_keys[i].first values; the predicate (which implies
//               those equalities) is still checked on every pair
//   kApply      apply_kind, correlated, exprs, compare_op: sierra kApply.
//               Uncorrelated: children[1] is the planned subquery, run once.
//               Correlated: `subquery` is its logical plan, re-planned per
//               distinct outer row with the outer references substituted
//   kUnionAll   the rows of every child in order
//
// Thread-safety: built by one thread, then read-only.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "sierra/column.h"
#include "sierra/expr.h"
#include "sierra/logical.h"
#include "src/catalog/catalog.h"
#include "storage/slice.h"

namespace shale::planner {

enum class PhysicalKind : uint8_t {
  kValues = 0,
  kPointGet = 1,
  kSliceScan = 2,
  kFilter = 3,
  kProject = 4,
  kSort = 5,
  kDistinct = 6,
  kLimit = 7,
  kInsert = 8,
  kUpdate = 9,
  kDelete = 10,
  kHashAggregate = 11,
  kNestedLoopJoin = 12,
  kHashJoin = 13,
  kIndexScan = 14,
  kApply = 15,
  kUnionAll = 16,
  kLookupJoin = 17,
  kStreamAggregate = 18,
};

struct PhysicalOperator;
using PhysicalPtr = std::unique_ptr<PhysicalOperator>;

struct PhysicalOperator {
  PhysicalKind kind = PhysicalKind::kValues;
  std::vector<sierra::ColumnInfo> columns;
  std::vector<PhysicalPtr> children;

  std::vector<std::vector<sierra::ExprPtr>> rows;   // kValues
  std::shared_ptr<const std::vector<std::vector<Value>>> value_rows;  // kValues: then these constant rows
  // How many rows a kValues operator yields.
  size_t values_count() const { return rows.size() + (value_rows ? value_rows->size() : 0); }
  std::shared_ptr<const catalog::TableDef> table;   // kPointGet, kSliceScan, kInsert, kUpdate, kDelete
  std::string key;                                  // kPointGet: encoded primary key
  std::vector<catalog::SliceDef> slices;            // kPointGet (one), kSliceScan, kIndexScan
  storage::KeyRange range;                          // kSliceScan, kIndexScan
  // kSliceScan, kIndexScan: when not empty, these disjoint ranges, in
  // ascending key order, are read one after another instead of `range`
  // (an IN list or an OR of equalities on a key column).
  std::vector<storage::KeyRange> ranges;
  // kSliceScan: merge the slices' rows into primary-key order (kIndexScan
  // always merges into index-key order).
  bool ordered = false;
  // kSliceScan, kIndexScan: rows in descending key order. Storage has no
  // reverse iterator yet, so the range is read forward keeping only its
  // last `limit_hint` keys (kIndexScan: only those rows are looked up).
  bool reverse = false;
  // kSliceScan, kIndexScan: the consumer needs at most this many rows (a
  // LIMIT above a sort the access path's order made unnecessary).
  uint64_t limit_hint = std::numeric_limits<uint64_t>::max();
  int index = -1;                                   // kIndexScan: position in table->indexes
  sierra::ExprPtr predicate;                        // kFilter, kNestedLoopJoin
  std::vector<sierra::ExprPtr> group_by;            // kHashAggregate, kStreamAggregate
  std::vector<sierra::AggregateCall> aggregates;    // kHashAggregate, kStreamAggregate
  sierra::JoinKind join_kind = sierra::JoinKind::kInner;  // kNestedLoopJoin, kHashJoin
  // kHashJoin: (expression over a left row, expression over a right row).
  std::vector<std::pair<sierra::ExprPtr, sierra::ExprPtr>> hash_keys;
  std::vector<sierra::ExprPtr> exprs;               // kProject, kUpdate
  std::vector<int> update_columns;                  // kUpdate
  std::vector<sierra::SortKey> sort_keys;           // kSort
  uint64_t limit = std::numeric_limits<uint64_t>::max();  // kLimit
  uint64_t offset = 0;                                    // kLimit
  sierra::InsertConflict insert_conflict = sierra::InsertConflict::kError;  // kInsert
  // kUpdate/kDelete writing one of several tables: as LogicalOperator's.
  bool stacked_target = false;
  sierra::ApplyKind apply_kind = sierra::ApplyKind::kScalar;  // kApply
  bool correlated = false;                                    // kApply
  sierra::CompareOp compare_op = sierra::CompareOp::kEq;      // kApply
  // kApply, correlated: the subquery's logical plan (owned by the logical
  // plan this physical plan was made from, which outlives it).
  const sierra::LogicalOperator* subquery = nullptr;
  // kLookupJoin: the right side as a logical plan whose key equalities read
  // the left row through outer references; run per distinct left key with
  // the left row substituted, so it plans to point gets / index ranges.
  // `hash_keys` and `predicate` as for kHashJoin (the predicate is checked
  // on the joined rows).
  std::shared_ptr<const sierra::LogicalOperator> lookup;
  // kLookupJoin: the right side's own filter (over the right table's rows,
  // no outer references; null: none). A batched lookup in a cluster sends
  // it with the keys (docs/cluster.md "Query path").
  sierra::ExprPtr lookup_filter;

  std::string Describe() const;
  // kSliceScan, kIndexScan: " points=N ordered reverse limit=N" as they apply.
  std::string ScanOptions() const;
  std::string ToString() const;  // the tree, indented (EXPLAIN)
};

}  // namespace shale::planner

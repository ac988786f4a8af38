// The row operators of the executor (internal to src/exec): the RowSource
// contract every operator keeps, Build (the plan-to-operator factory), and
// the helpers the operators share to read, lock and check rows.
//
// The contract of a RowSource:
//  1. Pull-based: Next(row) sets *row to the next row and returns true, or
//     returns false at the end. After false or an error the caller does not
//     call Next again; a source need not be restartable.
//  2. Rows are values: the caller owns *row and Next replaces its whole
//     content (it may reuse the capacity). No row points into the source,
//     so a row stays valid after later calls and after the source is gone.
//     After false or an error, *row is unspecified.
//  3. What is cheap: Build and the operators' constructors only make the
//     operator tree; no row is read, no lock taken, nothing sent (a remote
//     fragment may be serialized). All reading happens in Next.
//  4. What Next may block on: reading slices (local storage, or a remote
//     node through txn::DataRouter when the slice's ranking replica is
//     elsewhere), row locks of a locking read (up to the statement's
//     lock_wait_timeout; KILL QUERY ends the wait), and a sort's spill
//     files. Operators that need their whole input first (Sort,
//     HashAggregate, PushedAggregate, the right side of a nested-loop or
//     hash join, an uncorrelated Apply) read it on their first Next, so
//     that call may take as long as the whole input; the others stream.
//  5. Errors are values: every failure comes back as the Status of Next's
//     Result, never as an exception, and ends the statement, not the node.
//     A stored row that does not decode is RowCorrupt (logged, naming the
//     table and slice); SQL errors carry their MySQL code (SqlError).
//  6. Interrupts: KILL QUERY sets the flag of the statement's
//     InterruptScope (executor.h). Loops that read stored entries or
//     combine rows call CheckInterrupted() per entry or per candidate (one
//     relaxed load), so a kill surfaces as ER_QUERY_INTERRUPTED (1317) from
//     Next soon after, even while no row is returned.
//  7. Memory: an operator that buffers rows holds a MemoryReservation on
//     StatementMemory() and grows it per row kept; past the limit a sort
//     spills, the others fail with 1114 naming their "#sql-..." table
//     (src/exec/memory_budget.h).
//  8. Reads go through the statement's transaction (ReadRow, ReadRange):
//     its snapshot overlaid by its own writes; a locking read
//     (LockingReadOf) locks each row and re-reads its newest committed
//     version (LockAndReadRow).
//
// Thread-safety: an operator tree is built, pulled and destroyed by one
// thread, the one running its statement: operators read the statement's
// StatementScope and InterruptScope through this thread's t_statement and
// t_interrupt. The PhysicalOperator plan and the Engine outlive the tree
// (operators keep references into the plan).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "planner/physical.h"
#include "shale/status.h"
#include "src/common/errors.h"
#include "src/common/value.h"
#include "src/exec/engine.h"
#include "src/exec/executor.h"
#include "src/exec/memory_budget.h"
#include "src/exec/pushdown.h"
#include "src/txn/transaction.h"

namespace shale::exec::internal {

// The KILL QUERY flag of the statement running on this thread (InterruptScope).
extern constinit thread_local const std::atomic<bool>* t_interrupt;

// The transaction context of the statement running on this thread
// (StatementScope).
extern constinit thread_local StatementContext* t_statement;

// ER_QUERY_INTERRUPTED once the running statement has been killed. Cheap
// enough for every row: one relaxed load.
inline Status CheckInterrupted() {
  if (t_interrupt != nullptr && t_interrupt->load(std::memory_order_relaxed)) {
    return SqlError(ErrorCode::kQueryInterrupted, "Query execution was interrupted");
  }
  return Status::OK();
}

inline txn::Transaction* CurrentTxn() { return t_statement ? t_statement->txn : nullptr; }

// The running statement's memory budget (null: no limit) and spill directory.
inline MemoryBudget* StatementMemory() { return t_statement ? t_statement->memory : nullptr; }
inline std::string StatementSpillDir() { return t_statement ? t_statement->spill_dir : std::string(); }

// The bytes a hash table entry costs beyond its row or key: the node, the
// bucket slot and the key's string header.
constexpr uint64_t kHashEntryBytes = 64;

// Reads a row of a slice: through the statement's transaction (its snapshot,
// or the newest committed version when `latest`, overlaid by its own
// writes), or without one the newest committed version.
// The slice may be on another node (txn::SliceHandle, docs/cluster.md).
Status ReadRow(const txn::SliceHandle& slice, std::string_view key, bool latest, std::string* value);

// `filter`: a pushed filter fragment; a remote slice then sends only the
// rows that pass it (the caller still filters every row: the
// transaction's own writes are not filtered).
std::unique_ptr<storage::SliceIterator> ReadRange(const txn::SliceHandle& slice, const storage::KeyRange& range,
                                                  bool latest, const std::string* filter = nullptr);

// The lock mode reads of `table` take in this statement, if any.
std::optional<txn::LockMode> LockingReadOf(const catalog::TableDef& table);

// Row lock names: 'R' table id, encoded primary key; 'U' index slice id,
// encoded unique key values.
std::string LockName(char kind, uint64_t id, std::string_view key);

// `at`: the slice whose ranking replica's node holds the lock (null: here).
// `read_key`: a key of `at` the caller reads next with ReadRow(latest):
// when the lock is remote, that read comes back with it
// (txn::Transaction::Lock).
Status AcquireLock(std::string name, txn::LockMode mode, const txn::SliceHandle* at = nullptr,
                   const std::string* read_key = nullptr);

// Locks the row with primary key `pk_key` of `table` in `mode` (its lock
// lives at the ranking replica's node of `slice`).
Status LockRow(const catalog::TableDef& table, const txn::SliceHandle& slice, std::string_view pk_key,
               txn::LockMode mode);

// Locks the row with primary key `pk_key` of `table` in `mode`, then reads
// its newest committed version (the lock keeps it from changing): NotFound
// if it is gone.
Status LockAndReadRow(const catalog::TableDef& table, const txn::SliceHandle& slice, std::string_view pk_key,
                      txn::LockMode mode, std::string* value);

// Where a slice's reads go: this node's replica, or its ranking replica on
// another node (Engine::RouteSlice).
inline Result<txn::SliceHandle> LocalSlice(Engine* engine, const catalog::TableDef& table,
                                           const catalog::SliceDef& def) {
  return engine->RouteSlice(table, def);
}

// Corruption for a stored row of slice `def` of `table` that does not
// decode (`st`); logs the details.
Status RowCorrupt(const catalog::TableDef& table, const catalog::SliceDef& def, const Status& st);

// A row operator (the contract is at the top of this file).
class RowSource {
 public:
  virtual ~RowSource() = default;
  // Sets *row to the next row and returns true, or returns false at the end.
  virtual Result<bool> Next(Row* row) = 0;
};

// The operator tree of `op` (op_build.cc).
// `top_n` (0: none): only the first top_n rows of the result will be read
// (a LIMIT above, through 1:1 operators), so a sort may keep only those.
Result<std::unique_ptr<RowSource>> Build(Engine* engine, const planner::PhysicalOperator& op, uint64_t top_n = 0);

// The operators Build makes, one family per file.

// op_scan.cc: rows from the slices (or literal VALUES).
std::unique_ptr<RowSource> NewValuesSource(const planner::PhysicalOperator& op);
std::unique_ptr<RowSource> NewPointGetSource(Engine* engine, const planner::PhysicalOperator& op);
// `pushed`: a filter pushed to remote slices (the Filter above still
// applies it); serialized only once a remote slice is read.
std::unique_ptr<RowSource> NewSliceScanSource(Engine* engine, const planner::PhysicalOperator& op,
                                              const Pushdown& pushed = {});
std::unique_ptr<RowSource> NewIndexScanSource(Engine* engine, const planner::PhysicalOperator& op);

// op_filter_project.cc: row-at-a-time operators.
std::unique_ptr<RowSource> NewFilterSource(const planner::PhysicalOperator& op, std::unique_ptr<RowSource> child);
std::unique_ptr<RowSource> NewProjectSource(const planner::PhysicalOperator& op, std::unique_ptr<RowSource> child);
std::unique_ptr<RowSource> NewDistinctSource(const planner::PhysicalOperator& op, std::unique_ptr<RowSource> child);
std::unique_ptr<RowSource> NewLimitSource(const planner::PhysicalOperator& op, std::unique_ptr<RowSource> child);
std::unique_ptr<RowSource> NewUnionAllSource(Engine* engine, const planner::PhysicalOperator& op);

// op_sort.cc: ORDER BY. Under a LIMIT of at most kSortMaxTopN rows
// (`top_n`) the sort keeps only those rows (top-N).
constexpr uint64_t kSortMaxTopN = 10000;
std::unique_ptr<RowSource> NewSortSource(const planner::PhysicalOperator& op, std::unique_ptr<RowSource> child,
                                         uint64_t top_n);

// op_aggregate.cc: GROUP BY and aggregates.
std::unique_ptr<RowSource> NewStreamAggregateSource(const planner::PhysicalOperator& op,
                                                    std::unique_ptr<RowSource> child);
std::unique_ptr<RowSource> NewHashAggregateSource(const planner::PhysicalOperator& op,
                                                  std::unique_ptr<RowSource> child);
std::unique_ptr<RowSource> NewPushedAggregateSource(Engine* engine, const planner::PhysicalOperator& op,
                                                    Pushdown pushed);

// op_join.cc: joins and subqueries.
std::unique_ptr<RowSource> NewNestedLoopJoinSource(const planner::PhysicalOperator& op,
                                                   std::unique_ptr<RowSource> left,
                                                   std::unique_ptr<RowSource> right);
std::unique_ptr<RowSource> NewApplySource(Engine* engine, const planner::PhysicalOperator& op,
                                          std::unique_ptr<RowSource> child);
std::unique_ptr<RowSource> NewLookupJoinSource(Engine* engine, const planner::PhysicalOperator& op,
                                               std::unique_ptr<RowSource> left);

// Which right columns of each lookup join of a plan the operators above it
// read (through their expressions), with the join's own predicate, keys and
// right filter; a join missing from the map reads them all. Only what the
// plan's root is built or explained with (LookupColumnsScope) is known:
// plans built later, per outer row, read every column.
using LookupColumns = std::unordered_map<const planner::PhysicalOperator*, std::vector<bool>>;

// While alive, BatchedLookupOf knows the columns read of `plan`'s lookup
// joins (every column of the root is read).
class LookupColumnsScope {
 public:
  explicit LookupColumnsScope(const planner::PhysicalOperator& plan);
  ~LookupColumnsScope();
  LookupColumnsScope(const LookupColumnsScope&) = delete;
  LookupColumnsScope& operator=(const LookupColumnsScope&) = delete;

 private:
  LookupColumns columns_;
  const LookupColumns* outer_;
};

// How a lookup join runs batched (BatchedLookupJoinSource): the
// representation of the right table its left keys are routed to, and which
// join key gives each of its leading key columns.
struct BatchedLookup {
  // The table's primary key, or one of its secondary indexes.
  const catalog::RepresentationDef* rep = nullptr;
  // `rep` is a secondary index: its entries name rows by primary key, read
  // in a second batched hop.
  bool index = false;
  // The keys are the whole primary key: one row at most per key (a point
  // read); otherwise every entry under the key prefix.
  bool whole_key = false;
  // `rep` is an index of signed integer columns holding every right column
  // the plan reads (its key columns and signed integer primary-key columns:
  // their stored keys are their values): the rows are made from the
  // entries, with no second hop.
  bool covering = false;
  // Per leading key column of `rep` (at least its distribution columns),
  // the index of the join key equal to it in op.hash_keys.
  std::vector<size_t> key_order;

  // EXPLAIN's mark: "[pushed: batched lookup...]".
  std::string Describe(bool filter) const {
    std::string s = "[pushed: batched lookup";
    if (index) s += " (index " + rep->name + (covering ? ", covering)" : ")");
    else if (!whole_key) s += " (key prefix)";
    if (filter) s += ", filter";
    return s + "]";
  }
};

// Whether the lookup join `op` may run batched: its right side is a
// (filtered) scan of a table and its right keys are the leading key
// columns of a representation of it — the whole primary key, a prefix of
// it, or the leading columns of a secondary index — at least the columns
// it is distributed on, so each left row's keys name the one slice holding
// every match. The primary key is preferred (no second hop), then the
// index with the most leading columns keyed. A key column counts only when
// its equality compares as its keys are stored: a string column under its
// own collation (keys hold its weight strings). The right filter must also
// be PushableExpr (it runs where the slices are).
std::optional<BatchedLookup> BatchedLookupOf(const planner::PhysicalOperator& op);

std::unique_ptr<RowSource> NewBatchedLookupJoinSource(Engine* engine, const planner::PhysicalOperator& op,
                                                      std::unique_ptr<RowSource> left, BatchedLookup lookup);

}  // namespace shale::exec::internal

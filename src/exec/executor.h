// Executor: runs a physical plan against the node's slices.
//
// Operators are pull-based iterators (RowSource): Next() yields one row at a
// time. Sort and Distinct materialize; everything else streams. INSERT is
// executed as a whole statement: every row is converted and checked first
// and written only when all pass, so a failing INSERT changes nothing.
//
// Thread-safety: one plan execution per thread; the engine is shared.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <optional>

#include "planner/physical.h"
#include "shale/status.h"
#include "src/exec/engine.h"
#include "src/exec/memory_budget.h"
#include "src/exec/session.h"
#include "src/txn/transaction.h"

namespace shale::exec {

// While an InterruptScope is alive, plans executed on its thread stop with
// ER_QUERY_INTERRUPTED (1317) soon after *flag becomes true (KILL QUERY):
// scans and joins check it as they produce and combine rows.
class InterruptScope {
 public:
  explicit InterruptScope(const std::atomic<bool>* flag);
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

 private:
  const std::atomic<bool>* previous_;
};

// The transaction a statement runs in and how it reads (docs/transactions.md).
// Plans executed on a thread while a StatementScope is alive read through
// `txn` (its snapshot, overlaid by its own writes) and buffer their writes in
// it; without one, reads see the newest committed versions and writes
// commit at once (DDL helpers).
struct StatementContext {
  txn::Transaction* txn = nullptr;
  // Locking read (SELECT ... FOR UPDATE / FOR SHARE; the row reads of UPDATE
  // and DELETE): rows of `lock_table_id` (0: of every table) are locked in
  // this mode and read at their newest committed version.
  std::optional<txn::LockMode> locking_read;
  uint64_t lock_table_id = 0;
  // innodb_lock_wait_timeout.
  std::chrono::milliseconds lock_wait_timeout{50000};
  // KILL QUERY stops a lock wait too.
  const std::atomic<bool>* interrupt = nullptr;
  // Tables whose rows the transaction wrote, by id (filled by the executor;
  // the session checks at commit that their definitions did not change).
  std::map<uint64_t, std::shared_ptr<const catalog::TableDef>>* written_tables = nullptr;
  // sql_mode has STRICT_TRANS_TABLES or STRICT_ALL_TABLES: a value that does
  // not fit its column fails the statement; otherwise INSERT and UPDATE
  // store it adjusted with a warning (CoerceToColumnNonStrict).
  bool strict_mode = true;
  // strict_mode and sql_mode has ERROR_FOR_DIVISION_BY_ZERO (or
  // TRADITIONAL): INSERT, REPLACE and UPDATE fail with 1365 on a division by
  // zero (sierra::ScopedDivisionByZeroError).
  bool division_by_zero_error = true;
  // The statement's memory budget (shale_query_memory_limit,
  // src/exec/memory_budget.h) and the directory sorts spill runs to
  // (<data dir>/tmp). Null: no limit.
  MemoryBudget* memory = nullptr;
  std::string spill_dir;
  // shale_pushdown: filters and partial aggregates run where the slices
  // are (src/exec/pushdown.h); off, every row of a remote slice travels.
  bool pushdown = true;
};

class StatementScope {
 public:
  explicit StatementScope(StatementContext* context);
  ~StatementScope();
  StatementScope(const StatementScope&) = delete;
  StatementScope& operator=(const StatementScope&) = delete;

 private:
  StatementContext* previous_;
};

// Runs `plan` and returns its result set (or, for kInsert, the affected rows).
Result<StatementResult> ExecutePlan(Engine* engine, const planner::PhysicalOperator& plan);

// EXPLAIN: one row per operator of `plan` (depth-first, children
// indented): `operator` (PhysicalOperator::Describe) and `est_rows`, an
// upper bound on the rows it produces from the slices' row counts (point
// get 1; scans the rows of the slices they read; filters and joins their
// inputs' bounds; NULL where no bound is known, e.g. a correlated subquery).
// `tree` (EXPLAIN FORMAT=TREE): one row, one column `EXPLAIN`, the plan as
// indented "-> operator  (rows=N)" lines.
// `pushdown` (shale_pushdown): operators that push work to the slices
// say so ("[pushed: filter, partial aggregate]", src/exec/pushdown.h).
Result<StatementResult> ExplainPlan(Engine* engine, const planner::PhysicalOperator& plan, bool tree = false,
                                    bool pushdown = true);

// Fills the empty slices of secondary index `index` of `table` (which need
// not be in `table.indexes` yet) with an entry per row of the primary
// representation. ER_DUP_ENTRY (1062) if `index` is UNIQUE and two rows
// have equal key values without NULLs; then nothing is written.
// REQUIRES: the caller holds the table's write lock (Engine::TableWriteMutex).
// With `rows`, the entries are made from those full table rows instead of
// the rows stored in the primary representation.
Status BuildIndex(Engine* engine, const catalog::TableDef& table,
                  const catalog::RepresentationDef& index, const std::vector<Row>* rows = nullptr);

// Online index build (src/exec/online_ddl.h): writes into the slices of
// `index` (a pending index of `table`) an entry for every row visible at
// `reader`'s snapshot S, each as a version at S on every replica of its
// slice. Writers that commit after S maintain the index themselves and
// their versions are newer, so a backfill entry never hides a newer one.
// 1062 as BuildIndex for two rows of the snapshot with equal UNIQUE values.
// REQUIRES: every commit that did not maintain `index` finished before S
// (the DDL's barrier); `reader` stays open until this returns (its snapshot
// keeps the garbage collector below S).
Status BackfillIndex(Engine* engine, const catalog::TableDef& table, const catalog::RepresentationDef& index,
                     txn::Transaction* reader);

// 1062 if UNIQUE index `index` of `table` holds two entries with equal key
// values without NULLs (newest committed versions); OK for a non-unique one.
Status CheckUniqueEntries(Engine* engine, const catalog::TableDef& table, const catalog::RepresentationDef& index);

}  // namespace shale::exec

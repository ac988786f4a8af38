// Sierra logical operators: the typed relational algebra between the SQL
// front end and the planner. The binder produces a tree of these; the
// planner turns it into a physical plan. A tree prints as an indented plan
// (EXPLAIN).
//
// Each operator evaluates its expressions over the rows of its child (for
// kValues: over an empty row). `columns` describes its output rows.
//
// Operators (the payload each uses):
//   kValues   rows: literal rows (expressions over the empty row)
//   kScan     table: every row of the table's primary representation
//   kFilter   predicate: keeps rows where it is true
//   kProject  exprs: one output column per expression
//   kSort     sort_keys: stable sort
//   kDistinct (none): drops repeated rows, keeping first occurrences in order
//   kLimit    limit, offset
//   kInsert   table, insert_conflict: inserts the child's rows (in table
//             column order); outputs nothing, reports the rows affected.
//             A row whose primary or unique key is taken: kError fails the
//             statement (1062), kIgnore skips the row, kReplace deletes the
//             rows holding the keys first, kUpdate (ON DUPLICATE KEY UPDATE)
//             assigns exprs[i] to column update_columns[i] of the row
//             holding the key, each expression over that row followed by
//             the row that was to be inserted (VALUES(c))
//   kUpdate   table, update_columns, exprs: for each row of the child (full
//             table rows), assigns exprs[i] to column update_columns[i] in
//             order, each expression seeing the assignments before it
//             (MySQL's single-table UPDATE); reports rows matched and changed
//   kDelete   table: deletes the child's rows (full table rows)
//   kAggregate group_by, aggregates: one row per distinct group_by value
//             (one row in all when group_by is empty, even over no input),
//             holding the group_by values then the aggregates' results
//   kJoin     join_kind, predicate (may be null): rows of children[0]
//             concatenated with rows of children[1] where the predicate is
//             true; kLeft keeps unmatched left rows, with NULLs on the right
//   kApply    apply_kind, correlated, exprs (kIn/kAny/kAll: exprs[0], the
//             left operand over a children[0] row), compare_op (kAny/kAll):
//             each row of children[0] with one more column, the value of the
//             subquery children[1] for that row: kScalar its one value
//             (NULL if no row; ER_SUBQUERY_NO_1_ROW 1242 if several),
//             kExists 1/0, kIn `exprs[0] IN (subquery)`, kAny/kAll
//             `exprs[0] compare_op ANY|ALL (subquery)`, with SQL's NULL
//             rules. A correlated subquery reads the current children[0]
//             row through outer references (OuterRef below).
//   kUnion    the rows of every child in order (UNION ALL; UNION DISTINCT
//             is a kDistinct above it); children have as many columns as
//             the union, whose types are the children's common types
//
// Outer references: in the plan of a correlated subquery, a kColumnRef with
// a negative `column` c reads column -1 - c of the row of the operator the
// subquery is applied to (OuterRef/IsOuterRef). They are replaced with that
// row's values (SubstituteOuter) before the subquery runs.
//
// Thread-safety: a tree is built by one thread, then read-only.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "sierra/column.h"
#include "sierra/expr.h"
#include "src/catalog/catalog.h"

namespace shale::sierra {

// Serialized in plans: DO NOT CHANGE values.
enum class LogicalKind : uint8_t {
  kValues = 0,
  kScan = 1,
  kFilter = 2,
  kProject = 3,
  kSort = 4,
  kDistinct = 5,
  kLimit = 6,
  kInsert = 7,
  kUpdate = 8,
  kDelete = 9,
  kAggregate = 10,
  kJoin = 11,
  kApply = 12,
  kUnion = 13,
};

// Serialized in plans: DO NOT CHANGE values.
enum class InsertConflict : uint8_t { kError = 0, kIgnore = 1, kReplace = 2, kUpdate = 3 };

// Serialized in plans: DO NOT CHANGE values.
enum class ApplyKind : uint8_t { kScalar = 0, kExists = 1, kIn = 2, kAny = 3, kAll = 4 };

// Serialized in plans: DO NOT CHANGE values.
enum class JoinKind : uint8_t { kInner = 0, kLeft = 1 };

struct LogicalOperator;
// "a = (#0:a + 1), b = 2": the assignments of an UPDATE, for plan printing.
std::string DescribeAssignments(const catalog::TableDef& table, const std::vector<int>& columns,
                                const std::vector<ExprPtr>& exprs);

// "Aggregate group=[#0:a] aggregates=[count(*)]" and "LeftJoin on (...)".
std::string DescribeAggregate(const std::vector<ExprPtr>& group_by,
                              const std::vector<AggregateCall>& aggregates);
std::string DescribeJoin(JoinKind kind, const ExprPtr& predicate);
std::string DescribeApply(ApplyKind kind, bool correlated, CompareOp op, const std::vector<ExprPtr>& exprs);

struct SortKey {
  ExprPtr expr;
  bool desc = false;
};

struct LogicalOperator;
using LogicalPtr = std::unique_ptr<LogicalOperator>;

struct LogicalOperator {
  LogicalKind kind = LogicalKind::kValues;
  std::vector<ColumnInfo> columns;
  std::vector<LogicalPtr> children;

  std::vector<std::vector<ExprPtr>> rows;         // kValues
  // kValues: rows of constants (an INSERT of LOAD DATA's converted
  // fields), yielded after `rows` without an expression per value.
  std::shared_ptr<const std::vector<std::vector<Value>>> value_rows;
  std::shared_ptr<const catalog::TableDef> table; // kScan, kInsert, kUpdate, kDelete
  ExprPtr predicate;                              // kFilter, kJoin (ON)
  std::vector<ExprPtr> group_by;                  // kAggregate
  std::vector<AggregateCall> aggregates;          // kAggregate
  JoinKind join_kind = JoinKind::kInner;          // kJoin
  std::vector<ExprPtr> exprs;                     // kProject, kUpdate
  std::vector<int> update_columns;                // kUpdate: table column per exprs[i]
  std::vector<SortKey> sort_keys;                 // kSort
  uint64_t limit = std::numeric_limits<uint64_t>::max();  // kLimit
  uint64_t offset = 0;                                    // kLimit
  InsertConflict insert_conflict = InsertConflict::kError;  // kInsert
  ApplyKind apply_kind = ApplyKind::kScalar;              // kApply
  bool correlated = false;                                // kApply: children[1] has outer references
  CompareOp compare_op = CompareOp::kEq;                  // kApply: kAny, kAll
  // kUpdate/kDelete of a multi-table statement writing several tables: the
  // operators are stacked (each one's child is the previous target's, the
  // bottom one's the joined rows), and each reads columns
  // [offset, offset + limit) of the joined rows: its table's columns, then
  // its values (src/sql/binder.cc StackTargets, src/exec/executor.cc).
  bool stacked_target = false;

  static LogicalPtr Values(std::vector<ColumnInfo> columns, std::vector<std::vector<ExprPtr>> rows);
  // kValues of constant rows (value_rows).
  static LogicalPtr ValueRows(std::vector<ColumnInfo> columns,
                              std::shared_ptr<const std::vector<std::vector<Value>>> rows);
  // How many rows a kValues operator yields.
  size_t values_count() const { return rows.size() + (value_rows ? value_rows->size() : 0); }
  static LogicalPtr Scan(std::shared_ptr<const catalog::TableDef> table, const std::string& alias);
  static LogicalPtr Filter(LogicalPtr child, ExprPtr predicate);
  static LogicalPtr Project(LogicalPtr child, std::vector<ExprPtr> exprs,
                            std::vector<ColumnInfo> columns);
  static LogicalPtr Sort(LogicalPtr child, std::vector<SortKey> keys);
  static LogicalPtr Distinct(LogicalPtr child);
  static LogicalPtr Limit(LogicalPtr child, uint64_t limit, uint64_t offset);
  static LogicalPtr Insert(std::shared_ptr<const catalog::TableDef> table, LogicalPtr child);
  static LogicalPtr Update(std::shared_ptr<const catalog::TableDef> table, LogicalPtr child,
                           std::vector<int> columns, std::vector<ExprPtr> exprs);
  static LogicalPtr Delete(std::shared_ptr<const catalog::TableDef> table, LogicalPtr child);
  // `columns` names the output: group_by values, then aggregates.
  static LogicalPtr Aggregate(LogicalPtr child, std::vector<ExprPtr> group_by,
                              std::vector<AggregateCall> aggregates, std::vector<ColumnInfo> columns);
  static LogicalPtr Join(JoinKind kind, LogicalPtr left, LogicalPtr right, ExprPtr predicate);
  // `lhs` (kIn/kAny/kAll) is over `input` rows; `column` describes the new column.
  static LogicalPtr Apply(ApplyKind kind, LogicalPtr input, LogicalPtr subquery, ExprPtr lhs,
                          CompareOp op, bool correlated, ColumnInfo column);
  static LogicalPtr Union(std::vector<LogicalPtr> terms, std::vector<ColumnInfo> columns);

  // A deep copy.
  LogicalPtr Clone() const;

  // One line describing this operator alone, e.g. "Filter (#0:id >= 2)".
  std::string Describe() const;
  // The whole tree, one operator per line, children indented.
  std::string ToString() const;
};

// An outer reference to column `column` of the outer row.
ExprPtr OuterRef(int column, std::string name, SqlType type, bool nullable);
inline bool IsOuterRef(const Expr& e) { return e.kind == ExprKind::kColumnRef && e.column < 0; }
// Whether the plan reads outer references (not counting those of nested
// subqueries, which read this plan's own rows).
bool HasOuterRefs(const LogicalOperator& plan);
// A copy of `plan` with every outer reference replaced by the value of
// `outer` it names.
LogicalPtr SubstituteOuter(const LogicalOperator& plan, const Row& outer);
// A copy of `plan` whose outer references to column c read column
// column_of(c) instead (a subquery above an aggregate reads the group rows).
LogicalPtr RemapOuter(const LogicalOperator& plan, const std::function<int(int)>& column_of);
// The outer columns `plan` reads (as HasOuterRefs counts them), ascending.
std::vector<int> OuterColumns(const LogicalOperator& plan);

}  // namespace shale::sierra

// The plan cache: a session keeps the bound plan of each SELECT, INSERT,
// REPLACE, UPDATE and DELETE it runs, keyed by the statement's text with
// its literals taken out, so a statement seen again (the same text with
// other numbers or strings, as sysbench's prepared statements send them)
// skips parsing and binding: the cached plan gets the new literals and goes
// to the planner. Design, measurements and limits: docs/benchmarks.md, "The
// plan cache".
//
// How a statement becomes cacheable (Session::LookUpPlanCache in
// session_plan_cache.cc):
//  1. ShapeOf(sql) tokenizes it. Only one statement of those kinds is a
//     candidate, and only when nothing in it may evaluate differently from
//     one run to the next without its text changing: no @variables or
//     @@variables, no function call other than COUNT/SUM/MIN/MAX/AVG (an
//     INSERT's table name before its column list, its VALUES and VALUES(c)
//     in ON DUPLICATE KEY UPDATE are not calls), no
//     CURRENT_*/LOCALTIME*/UTC_* keyword, no information_schema, system,
//     mysql or performance_schema name, no SQL_CALC_FOUND_ROWS, no
//     SELECT ... INTO. Its integer literals (those that fit BIGINT) and
//     plain string literals are parameters; LIMIT and OFFSET numbers,
//     operands of + - * / % (k = k + 1: the operation's type depends on
//     the literal's digits), literals after an introducer or type keyword
//     (X'..', _utf8mb4'..', DATE '..', INTERVAL 5) and adjacent strings
//     stay in the key.
//  2. The first time a shape is seen, the session binds the statement
//     three times: as written, and with two sets of sentinel values in
//     place of the parameters (different types of digit counts and string
//     lengths). PlanTemplate::Make finds each sentinel as a constant of
//     the sentinel plan, only where its value decides nothing but itself:
//     in `predicate` expressions (WHERE, ON, HAVING), an INSERT's VALUES
//     rows and the assigned values of UPDATE and ON DUPLICATE KEY UPDATE;
//     never in a select list, GROUP BY or ORDER BY (they name and type
//     result columns). The binder leaves those literals as plain constants:
//     converting a value to its column's type, and the errors and warnings
//     that raises, happen when the statement executes, cached or not.
//     The template is kept only if instantiating it with the written
//     values gives exactly the plan bound from the written text, and with
//     the second sentinel set exactly the plan bound from that text
//     (PlanFingerprint: every operator field, every expression with its
//     type, collation and constants, every result column). So a literal
//     that influences anything but its own constant (a column name, a
//     type, a folded expression, a LIMIT) makes the shape uncacheable,
//     and it is remembered as such.
//  3. A hit is used only while it is still valid: the same current
//     database (part of the key), no session state change since
//     (Session bumps an epoch on every statement other than SELECT,
//     INSERT, UPDATE, DELETE, transaction control and SHOW, and on
//     SetVariable), the same global-variables snapshot (SET GLOBAL makes a
//     new one), and every table the plan reads still the definition the
//     catalog publishes (any DDL or slice-map change publishes a new
//     TableDef). Privileges are checked on every execution as before.
//
// Thread-safety: a PlanCache belongs to one session (one thread at a
// time). A PlanTemplate is read-only after Make.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sierra/logical.h"
#include "src/common/value.h"
#include "src/sql/ast.h"

namespace shale::catalog {
struct TableDef;
}

namespace shale::exec {

// A candidate statement with its parameters taken out.
struct StatementShape {
  // The tokens with each parameter replaced by a marker of its kind.
  std::string key;
  // The parameters' values, in text order.
  std::vector<Value> params;
  // Byte range [first, second) of each parameter's literal in the text.
  std::vector<std::pair<size_t, size_t>> spans;
};

// The shape of `sql`, or nullopt when it is not a candidate (see 1. above).
std::optional<StatementShape> ShapeOf(std::string_view sql);

// `sql` with every parameter replaced by the literal of `values[i]`
// (integers as digits, strings single-quoted and escaped).
// REQUIRES: values.size() == shape.spans.size().
std::string WithParams(std::string_view sql, const StatementShape& shape, const std::vector<Value>& values);

// Sentinel values for the parameters of `shape`: set 0 and set 1 differ
// from each other in every value and in every value's length.
std::vector<Value> SentinelParams(const StatementShape& shape, int set);

// A text that is equal for two plans exactly when they are the same plan:
// every operator field, every expression (kind, type, nullability,
// collation, constant value and kind), every result column, and the
// identity of every table definition.
std::string PlanFingerprint(const sierra::LogicalOperator& plan);

// A bound plan whose parameter constants can be replaced.
class PlanTemplate {
 public:
  // The template of `plan`, bound from the statement with `sentinels` as
  // its parameters; nullopt unless each sentinel is found, only where a
  // parameter may stand (see 2. above).
  static std::optional<PlanTemplate> Make(sierra::LogicalPtr plan, const std::vector<Value>& sentinels);

  // The plan with parameter i's constants holding params[i].
  sierra::LogicalPtr Instantiate(const std::vector<Value>& params) const;

  // The table definitions the plan was bound against.
  const std::vector<std::shared_ptr<const catalog::TableDef>>& tables() const { return tables_; }

 private:
  PlanTemplate() = default;
  std::shared_ptr<const sierra::LogicalOperator> plan_;
  // Parameter constants (by identity in plan_) and their parameter index.
  std::unordered_map<const sierra::Expr*, size_t> sites_;
  std::vector<std::shared_ptr<const catalog::TableDef>> tables_;
};

// One cached shape.
struct PlanCacheEntry {
  // The statement as parsed the first time (its literals are those of that
  // text; the session uses it only for what does not depend on them: its
  // kind, privileges, locking clause). Null with `tmpl`: the shape is not
  // cacheable.
  std::shared_ptr<const sql::ast::Statement> statement;
  std::shared_ptr<const PlanTemplate> tmpl;
  uint64_t epoch = 0;  // the session's plan-cache epoch when made
  std::shared_ptr<const std::map<std::string, Value>> globals;  // the snapshot bound against
};

// A session's cache: at most kCapacity shapes (all dropped when full).
class PlanCache {
 public:
  static constexpr size_t kCapacity = 512;

  const PlanCacheEntry* Find(const std::string& key) const;
  void Put(std::string key, PlanCacheEntry entry);
  void Erase(const std::string& key) { entries_.erase(key); }

  // Statements served from the cache, and candidates that had to be bound
  // (written by the session's thread, read by SHOW STATUS).
  std::atomic<uint64_t> hits{0};
  std::atomic<uint64_t> misses{0};

 private:
  std::unordered_map<std::string, PlanCacheEntry> entries_;
};

}  // namespace shale::exec

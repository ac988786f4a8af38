// The abstract syntax tree the parser produces: statements as written, names
// unresolved. The binder (src/sql/binder.h) resolves names against the
// catalog and turns a tree into Sierra or a command.
//
// Thread-safety: plain data.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "src/common/value.h"

namespace shale::sql::ast {

struct SelectStmt;

enum class ExprKind : uint8_t {
  kLiteral,    // value
  kColumn,     // names: [col] / [table, col] / [db, table, col]
  kStar,       // names: [] or [table] or [db, table]
  kBinary,     // op, children[0..1]
  kUnary,      // op ("NOT", "-", "+", "!", "~"), children[0]
  kIsNull,     // negated, children[0]
  kInList,     // negated, children[0] IN (children[1..])
  kBetween,    // negated, children[0] BETWEEN children[1] AND children[2]
  kFunction,   // name (upper-cased), children = arguments; distinct for
               // COUNT(DISTINCT x); COUNT(*) has one kStar child
  kSystemVar,  // name (lower-cased), scope
  kDefault,    // the DEFAULT keyword in INSERT ... VALUES
  kCase,       // [operand if has_operand,] when, then, when, then, ... [, else if has_else]
  kLike,       // negated, children[0] LIKE children[1] [ESCAPE children[2]]
  kSubquery,   // subquery; op: "" a scalar subquery, "EXISTS", "IN" (children[0]
               // [NOT] IN (subquery), negated), or a comparison with name "ANY"
               // or "ALL" (children[0] op ANY|ALL (subquery))
  kUserVar,    // @name: name (lower-cased: user variables ignore case)
};

struct Expr {
  ExprKind kind = ExprKind::kLiteral;
  Value value;
  std::vector<std::string> names;
  std::string op;    // for kBinary: "=", "<>", "<", "<=", ">", ">=", "<=>", "AND", "OR", "XOR", "+", "-", "*", "/", "%", "DIV", "&", "|", "^", "<<", ">>"
  std::string name;  // function or variable name
  std::string scope; // system variables: "", "session", "global"
  bool negated = false;
  bool distinct = false;  // kFunction: an aggregate over distinct values
  bool has_operand = false;  // kCase: CASE x WHEN ...
  bool has_else = false;     // kCase
  // kLiteral: a hexadecimal or bit literal (0x41, X'41', b'1'); `value` is
  // its bytes. MySQL reads it as a binary string, but as the unsigned
  // integer of its bytes where a number is wanted (0x41 + 0 is 65).
  bool hex_number = false;
  std::vector<std::unique_ptr<Expr>> children;
  // kFunction GROUP_CONCAT(... ORDER BY e [ASC|DESC], ...): the keys.
  std::vector<std::unique_ptr<Expr>> order_by;
  std::vector<bool> order_desc;
  std::shared_ptr<const SelectStmt> subquery;  // kSubquery
  std::string text;  // the source text of this expression
};
using ExprPtr = std::unique_ptr<Expr>;

// A deep copy of `e` (subqueries are shared: they are immutable).
inline ExprPtr Clone(const Expr& e) {
  auto out = std::make_unique<Expr>();
  out->kind = e.kind;
  out->value = e.value;
  out->names = e.names;
  out->op = e.op;
  out->name = e.name;
  out->scope = e.scope;
  out->negated = e.negated;
  out->distinct = e.distinct;
  out->has_operand = e.has_operand;
  out->has_else = e.has_else;
  out->hex_number = e.hex_number;
  out->subquery = e.subquery;
  out->text = e.text;
  for (const auto& c : e.children) out->children.push_back(Clone(*c));
  for (const auto& c : e.order_by) out->order_by.push_back(Clone(*c));
  out->order_desc = e.order_desc;
  return out;
}

struct TableName {
  std::string db;  // empty: the current database
  std::string table;
};

struct JoinTree;

struct TableRef {
  TableName name;
  std::string alias;  // empty: none
  std::shared_ptr<const SelectStmt> derived;  // FROM (SELECT ...) alias: a derived table
  // FROM ... (a JOIN b ON ...) ...: a parenthesized join (name empty).
  std::shared_ptr<const JoinTree> nested;
};

// A table joined to the ones before it in FROM.
struct JoinClause {
  // ',' / CROSS JOIN are kInner without `on`.
  enum class Kind : uint8_t { kInner, kLeft, kRight };
  Kind kind = Kind::kInner;
  TableRef table;
  std::unique_ptr<Expr> on;  // null: none
  bool natural = false;                 // NATURAL [LEFT|RIGHT] JOIN
  std::vector<std::string> using_columns;  // JOIN ... USING (a, b)
};

// The tables of a parenthesized join: `first` joined with `joins` in order.
struct JoinTree {
  TableRef first;
  std::vector<JoinClause> joins;
};

struct SelectItem {
  ExprPtr expr;
  std::string alias;  // empty: none
};

struct OrderItem {
  ExprPtr expr;
  bool desc = false;
};

struct SelectStmt {
  bool distinct = false;
  bool calc_found_rows = false;  // SELECT SQL_CALC_FOUND_ROWS ... (for FOUND_ROWS())
  std::vector<SelectItem> items;
  std::optional<TableRef> from;   // the first table of FROM
  std::vector<JoinClause> joins;  // the tables after it, in order
  ExprPtr where;
  std::vector<ExprPtr> group_by;
  bool rollup = false;  // GROUP BY ... WITH ROLLUP
  ExprPtr having;
  std::vector<OrderItem> order_by;
  std::optional<uint64_t> limit;
  uint64_t offset = 0;
  // A UNION: the terms in order (this statement's own select list, FROM,
  // WHERE, GROUP BY and HAVING are then empty; its ORDER BY and LIMIT apply
  // to the whole union). union_all[i] says whether terms i and i + 1 are
  // joined by UNION ALL (else UNION DISTINCT).
  std::vector<SelectStmt> union_terms;
  std::vector<bool> union_all;
  // SELECT ... FOR UPDATE (kUpdate), FOR SHARE / LOCK IN SHARE MODE (kShare).
  enum class LockMode : uint8_t { kNone, kShare, kUpdate };
  LockMode lock = LockMode::kNone;
};

// UPDATE t SET col = expr, ... [WHERE] [ORDER BY] [LIMIT n]
struct Assignment {
  std::vector<std::string> names;  // [col] / [table, col] / [db, table, col]
  ExprPtr value;                   // kDefault for SET c = DEFAULT
};

// INSERT [IGNORE] / REPLACE INTO t [(cols)] {VALUES (...), ... | SELECT ...}
// [ON DUPLICATE KEY UPDATE col = expr, ...]
struct InsertStmt {
  TableName table;
  std::vector<std::string> columns;            // empty: all, in table order
  std::vector<std::vector<ExprPtr>> rows;
  // Rows of values already converted (LOAD DATA), one per column named,
  // each stored as given: what `rows` of literals would say, without an
  // expression per field. A statement has `rows` or `value_rows`, not both.
  std::shared_ptr<const std::vector<std::vector<Value>>> value_rows;
  std::shared_ptr<const SelectStmt> select;    // INSERT ... SELECT (rows empty)
  bool ignore = false;                         // INSERT IGNORE: skip rows with duplicate keys
  bool replace = false;                        // REPLACE: delete the rows with duplicate keys first
  std::vector<Assignment> on_duplicate;        // ON DUPLICATE KEY UPDATE
};

// Multi-table UPDATE t1 JOIN t2 ON ... SET ...: `table` and `joins` are the
// table references (no ORDER BY or LIMIT then).
struct UpdateStmt {
  TableRef table;
  std::vector<JoinClause> joins;
  std::vector<Assignment> assignments;
  ExprPtr where;
  std::vector<OrderItem> order_by;
  std::optional<uint64_t> limit;
};

// DELETE FROM t [WHERE] [ORDER BY] [LIMIT n]; multi-table
// DELETE t1[, ...] FROM refs [WHERE] and DELETE FROM t1[, ...] USING refs
// [WHERE]: `targets` names the tables rows are deleted from (by alias or
// name), `table` and `joins` are the table references.
struct DeleteStmt {
  TableRef table;
  bool multi = false;
  std::vector<TableName> targets;
  std::vector<JoinClause> joins;
  bool truncate = false;  // TRUNCATE [TABLE] t: every row
  ExprPtr where;
  std::vector<OrderItem> order_by;
  std::optional<uint64_t> limit;
};

// KEY/INDEX/UNIQUE in CREATE TABLE, CREATE INDEX, ALTER TABLE ADD INDEX.
struct IndexDefinition {
  std::string name;                  // empty: named after its first column
  std::vector<std::string> columns;  // in key order
  bool unique = false;
  std::vector<uint32_t> prefix_lengths = {};  // per column: col(n) prefix length, 0 if none
};

struct ColumnDefinition {
  std::string name;
  std::string type_name;  // upper-cased: INT, INTEGER, BIGINT, VARCHAR, ...
  std::optional<uint32_t> length;
  std::optional<uint32_t> scale;  // DECIMAL(p,s), FLOAT(m,d), DOUBLE(m,d)
  bool is_unsigned = false;
  bool not_null = false;
  bool primary_key = false;
  bool unique = false;  // the UNIQUE [KEY] column attribute
  ExprPtr default_value;
  ExprPtr on_update;  // ON UPDATE CURRENT_TIMESTAMP[(fsp)]
  std::string charset;    // CHARACTER SET / CHARSET name as written; empty: none
  std::string collation;  // COLLATE name as written; empty: none
  bool binary = false;    // the BINARY attribute of a text type (its charset's _bin collation)
  std::vector<std::string> elements;  // ENUM('a', 'b', ...)
  bool auto_increment = false;        // AUTO_INCREMENT
};

struct CreateTableStmt {
  TableName table;
  bool if_not_exists = false;
  std::vector<ColumnDefinition> columns;
  std::vector<std::string> primary_key;  // from a PRIMARY KEY (...) clause
  std::vector<IndexDefinition> indexes;  // KEY / INDEX / UNIQUE clauses
  std::optional<uint32_t> slices;        // SLICES=n
  std::optional<uint64_t> auto_increment;  // AUTO_INCREMENT=n: the first value
  std::optional<uint32_t> replicas;      // REPLICAS=n
  std::string charset;    // [DEFAULT] CHARSET= / CHARACTER SET= table option; empty: none
  std::string collation;  // [DEFAULT] COLLATE= table option; empty: none
  std::string compression;  // COMPRESSION= table option ('zlib', 'none'); empty: none given
  std::optional<TableName> like;         // CREATE TABLE t LIKE u
  std::shared_ptr<const SelectStmt> as_select;  // CREATE TABLE t [AS] SELECT ...
};

struct DropTableStmt {
  std::vector<TableName> tables;
  bool if_exists = false;
};

struct CreateDatabaseStmt {
  std::string name;
  bool if_not_exists = false;
};

struct DropDatabaseStmt {
  std::string name;
  bool if_exists = false;
};

struct UseStmt {
  std::string db;
};

struct SetAssignment {
  std::string scope;  // "", "session", "global"; "user" for SET @name
  std::string name;   // lower-cased system (or user) variable name
  ExprPtr value;
};

struct SetStmt {
  std::vector<SetAssignment> assignments;
};

struct ShowStmt {
  enum class Kind : uint8_t { kDatabases, kTables, kVariables, kWarnings, kCreateTable, kColumns, kIndex,
                              kCharset, kCollation, kTableStatus, kCreateDatabase, kEngines };
  Kind kind = Kind::kDatabases;
  std::string db;                  // SHOW TABLES/TABLE STATUS FROM db, SHOW CREATE DATABASE db
  TableName table;                 // SHOW CREATE TABLE t / SHOW COLUMNS FROM t
  std::optional<std::string> like; // LIKE 'pattern'
  // SHOW ... WHERE expr: a filter over the shown rows, naming the shown
  // columns (SHOW VARIABLES WHERE Variable_name IN (...)).
  std::shared_ptr<const Expr> where;
  bool full = false;
  bool global = false;             // SHOW GLOBAL VARIABLES
  bool if_not_exists = false;      // SHOW CREATE DATABASE IF NOT EXISTS db
};

struct TransactionStmt {
  // kSavepoint: SAVEPOINT s; kRollbackTo: ROLLBACK [WORK] TO [SAVEPOINT] s;
  // kRelease: RELEASE SAVEPOINT s (`savepoint` names s).
  enum class Kind : uint8_t { kBegin, kCommit, kRollback, kSavepoint, kRollbackTo, kRelease };
  Kind kind = Kind::kBegin;
  std::string savepoint{};  // {}: aggregate initializers may leave it out (-Wmissing-field-initializers)
  // START TRANSACTION READ ONLY / READ WRITE / WITH CONSISTENT SNAPSHOT.
  bool read_only = false;
  bool read_write = false;
  bool consistent_snapshot = false;
};

// CREATE [UNIQUE] INDEX name ON t (cols), DROP INDEX name ON t and
// ALTER TABLE t ADD/DROP INDEX ... are all an index change of one table.
// ALTER TABLE ... ADD/DROP/MODIFY/CHANGE [COLUMN].
struct ColumnChange {
  enum class Kind : uint8_t { kAdd, kDrop, kModify, kChange };
  Kind kind = Kind::kAdd;
  std::string name;         // kDrop, kChange: the existing column (kModify: def.name)
  ColumnDefinition def;     // kAdd, kModify, kChange: the new definition
  bool first = false;       // FIRST
  std::string after;        // AFTER col (empty: none)
};

struct AlterTableStmt {
  TableName table;
  std::vector<IndexDefinition> add_indexes;
  std::vector<std::string> drop_indexes;
  std::vector<ColumnChange> column_changes;
  std::optional<TableName> rename_to;  // ALTER TABLE t RENAME [TO] u
  std::optional<uint64_t> auto_increment;  // ALTER TABLE t AUTO_INCREMENT [=] n
};

// RENAME TABLE a TO b [, c TO d ...]
struct RenameTableStmt {
  std::vector<std::pair<TableName, TableName>> renames;
};

// EXPLAIN [FORMAT=TRADITIONAL|TREE] {SELECT ... | UPDATE ... | DELETE ...}:
// the physical plan, one operator per row (TREE: one text value). Exactly
// one of select, update, del is set.
struct ExplainStmt {
  std::shared_ptr<const SelectStmt> select;
  std::shared_ptr<const UpdateStmt> update;
  std::shared_ptr<const DeleteStmt> del;
  bool tree = false;  // FORMAT=TREE
  bool analyze = false;  // EXPLAIN ANALYZE: runs the query, shows what it did
};

// 'user'@'host' in account statements. CURRENT_USER[()] and USER() are
// `current` (the session's own account).
struct AccountName {
  std::string user;
  std::string host = "%";
  bool current = false;
  // IDENTIFIED [WITH plugin] [BY 'password'] (CREATE/ALTER USER).
  bool identified = false;
  std::string plugin;    // lower-cased; empty: the default plugin
  std::string password;
};

// LOAD DATA [LOCAL] INFILE 'file' [REPLACE | IGNORE] INTO TABLE t
// [CHARACTER SET cs] [{FIELDS | COLUMNS} [TERMINATED BY 's'] [[OPTIONALLY]
// ENCLOSED BY 'c'] [ESCAPED BY 'c']] [LINES [STARTING BY 's'] [TERMINATED
// BY 's']] [IGNORE n {LINES | ROWS}] [(col_or_@var, ...)] [SET col = expr,
// ...]. Run by src/exec/load_data.cc.
struct LoadDataStmt {
  bool local = false;
  std::string file;
  bool replace = false;
  bool ignore = false;
  TableName table;
  std::string charset;              // lower-cased; empty: the session's (utf8mb4)
  std::string fields_terminated = "\t";
  std::string fields_enclosed;      // at most one character
  bool optionally_enclosed = false;
  std::string fields_escaped = "\\";  // at most one character
  std::string lines_starting;
  std::string lines_terminated = "\n";
  uint64_t ignore_lines = 0;
  // The column list: a column name, or "@name" (lower-cased) for a user
  // variable. Empty: every column in table order.
  std::vector<std::string> targets;
  std::vector<Assignment> set;      // SET col = expr, ...
};

// Statements about accounts, privileges, threads and server status, run by
// the session itself (src/exec/session.cc) rather than bound to a plan.
struct AdminStmt {
  enum class Kind : uint8_t {
    kCreateUser,      // accounts, if_not_exists
    kDropUser,        // accounts, if_exists
    kAlterUser,       // accounts, if_exists
    kGrant,           // privileges ON db.table TO accounts [WITH GRANT OPTION]
    kRevoke,          // privileges ON db.table FROM accounts
    kShowGrants,      // accounts: empty (own) or one
    kKill,            // thread_id, kill_query
    kShowStatus,      // global, like
    kShowProcesslist, // full
    kLoadData,        // load_data
  };
  Kind kind = Kind::kCreateUser;
  std::vector<AccountName> accounts;
  bool if_exists = false;
  bool if_not_exists = false;
  // Upper-cased privilege names as written: "SELECT", "CREATE USER", "ALL",
  // "USAGE", "GRANT OPTION".
  std::vector<std::string> privileges;
  // ON level: db "*" with table "*" is *.*; table "*" is db.*; db empty is
  // the current database.
  std::string db;
  std::string table;
  bool with_grant_option = false;
  uint64_t thread_id = 0;
  bool kill_query = false;
  bool global = false;
  bool full = false;
  std::optional<std::string> like;
  std::shared_ptr<const LoadDataStmt> load_data;  // kLoadData
};

using Statement = std::variant<SelectStmt, InsertStmt, CreateTableStmt, DropTableStmt,
                               CreateDatabaseStmt, DropDatabaseStmt, UseStmt, SetStmt, ShowStmt,
                               TransactionStmt, UpdateStmt, DeleteStmt, AlterTableStmt,
                               ExplainStmt, RenameTableStmt, AdminStmt>;

}  // namespace shale::sql::ast

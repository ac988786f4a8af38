// Binder: resolves the names of a parsed statement against the catalog and
// the session, type-checks it, and produces either a Sierra logical plan
// (queries, INSERT, SHOW) or a command for the statement executor (DDL, USE,
// SET, transaction control).
//
// Name rules (MySQL's): database and table names are case-sensitive, column
// names and aliases are not; an unqualified table is in the current database
// (ER_NO_DB_ERROR 1046 when there is none).
//
// Thread-safety: Bind() may run concurrently for different sessions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "shale/status.h"
#include "sierra/logical.h"
#include "src/catalog/catalog.h"
#include "src/sql/ast.h"
#include "src/sql/information_schema.h"
#include "src/sql/system_tables.h"

namespace shale::sql {

// What the binder may read of the session.
struct BindContext {
  catalog::Catalog* catalog = nullptr;
  // Rows of the system database's tables (src/sql/system_tables.h). Empty:
  // no system database (the name resolves through the catalog as usual).
  SystemTableFn system_table;
  std::string current_db;
  const std::map<std::string, Value>* variables = nullptr;  // session variables
  // Global variables, for @@global.name and SHOW GLOBAL VARIABLES (null: the
  // session's are used).
  const std::map<std::string, Value>* global_variables = nullptr;
  std::vector<std::vector<Value>> warnings;                   // for SHOW WARNINGS: level, code, message
  uint32_t connection_id = 0;
  std::string user;  // 'user@host'
  // information_schema's view of the session (privileges, threads, row
  // counts); also filters SHOW TABLE STATUS.
  InfoSchemaSource info_schema;
  // User variables (@name, lower-cased names); null: none are set.
  const std::map<std::string, Value>* user_variables = nullptr;
  // What ROW_COUNT(), FOUND_ROWS() and LAST_INSERT_ID() return: the
  // session's values from the statements before this one.
  int64_t row_count = -1;
  uint64_t found_rows = 0;
  uint64_t last_insert_id = 0;
  // LAST_INSERT_ID(expr) stores expr here, for the session to remember once
  // the statement succeeds (null: the value is only returned).
  std::optional<uint64_t>* set_last_insert_id = nullptr;
};

struct CreateDatabaseCmd {
  std::string name;
  bool if_not_exists = false;
};
struct DropDatabaseCmd {
  std::string name;
  bool if_exists = false;
};
struct UseCmd {
  std::string db;
};
struct CreateTableCmd {
  catalog::TableDef def;  // id and slices not yet allocated
  bool if_not_exists = false;
  uint32_t slices = 0;    // 0: the node default
  uint32_t replicas = 0;  // REPLICAS=n; 0: the default (catalog::kDefaultReplicas)
  // CREATE TABLE ... AS SELECT: the rows to insert into the new table, one
  // column per visible column of `def`, in order.
  sierra::LogicalPtr as_select;
  // AUTO_INCREMENT=n table option: the first AUTO_INCREMENT value.
  std::optional<int64_t> auto_increment;
};
struct DropTableCmd {
  std::vector<std::pair<std::string, std::string>> tables;  // (db, table)
  bool if_exists = false;
};
struct SetCmd {
  std::vector<std::pair<std::string, Value>> assignments;  // session variables
  std::vector<std::pair<std::string, Value>> global_assignments;  // SET GLOBAL
  // SET TRANSACTION ... without GLOBAL/SESSION: the next transaction only
  // (transaction_isolation, transaction_read_only).
  std::vector<std::pair<std::string, Value>> next_transaction;
  // SET @name = expr: the user variables, in order, and a plan producing
  // one row with their new values (one column each); null when none.
  std::vector<std::string> user_variables;
  sierra::LogicalPtr user_values;
};
struct TransactionCmd {
  ast::TransactionStmt::Kind kind;
  bool read_only = false;
  bool read_write = false;
  bool consistent_snapshot = false;
  std::string savepoint;  // kSavepoint, kRollbackTo, kRelease
};
// Index changes of one table (CREATE/DROP INDEX, ALTER TABLE ADD/DROP
// INDEX): drops first, then adds, all in one catalog change. The added
// representations have their key columns resolved and no slices yet.
//
// Column changes (ADD/DROP/MODIFY/CHANGE COLUMN) instead give `new_def`,
// the whole new definition computed from `old_table` (its secondary
// indexes without slices: they are rebuilt), and `column_source`: for
// each new column the old column its values come from, or -1 (its
// default). `rename_to` (db, table) renames the table last.
struct AlterTableCmd {
  std::string db;
  std::string table;
  std::vector<std::string> drop_indexes;
  std::vector<catalog::RepresentationDef> add_indexes;
  std::shared_ptr<const catalog::TableDef> old_table;
  std::optional<catalog::TableDef> new_def;
  std::vector<int> column_source;
  std::optional<std::pair<std::string, std::string>> rename_to;
  // ALTER TABLE ... AUTO_INCREMENT=n: the next AUTO_INCREMENT value (at
  // least the largest value stored + 1, as InnoDB).
  std::optional<int64_t> auto_increment;
};
struct RenameTableCmd {
  // ((db, table), (new db, new table)) in order.
  std::vector<std::pair<std::pair<std::string, std::string>, std::pair<std::string, std::string>>> renames;
};
// EXPLAIN: plan `plan` and describe it instead of running it.
struct ExplainCmd {
  sierra::LogicalPtr plan;
  bool tree = false;  // FORMAT=TREE: one text value
  bool analyze = false;  // EXPLAIN ANALYZE: run it and report what it did
};
// A Sierra plan: a query (kInsert at the root for INSERT).
struct PlanCmd {
  sierra::LogicalPtr plan;
};

using BoundStatement = std::variant<PlanCmd, CreateDatabaseCmd, DropDatabaseCmd, UseCmd,
                                    CreateTableCmd, DropTableCmd, SetCmd, TransactionCmd,
                                    AlterTableCmd, ExplainCmd, RenameTableCmd>;

Result<BoundStatement> Bind(const ast::Statement& stmt, const BindContext& ctx);

// Validates a database or table name (length, characters): ER_WRONG_DB_NAME /
// ER_WRONG_TABLE_NAME / ER_TOO_LONG_IDENT.
Status CheckDatabaseName(const std::string& name);
Status CheckTableName(const std::string& name);

// The SQL type written in CREATE TABLE for `c`, e.g. "varchar(20)".
// "current_timestamp()" / "current_timestamp(3)": DEFAULT and ON UPDATE of a
// DATETIME/TIMESTAMP column as MariaDB prints them.
std::string CurrentTimestampSql(const SqlType& t);
std::string ColumnTypeSql(const catalog::ColumnDef& c);
// Resolves index definitions against `table`'s columns and appends them to
// `*out` (which holds the indexes the table will keep): unnamed indexes are
// named after their first column (then _2, _3, ...) as in MySQL; errors
// 1061 (duplicate name), 1072 (unknown column), 1060 (column twice).
Status ResolveIndexes(const catalog::TableDef& table, const std::vector<ast::IndexDefinition>& defs,
                      std::vector<catalog::RepresentationDef>* out);
// CREATE TABLE text for SHOW CREATE TABLE; `auto_increment` > 1 is shown as
// the AUTO_INCREMENT=n table option (the next value), as MySQL.
std::string ShowCreateTableSql(const catalog::TableDef& t, int64_t auto_increment = 0);
// The AUTO_INCREMENT attributes of CREATE TABLE's columns, checked and set
// on `def` (whose keys are resolved): one column at most, of an integer
// type (1063), the first column of some key (1075); it becomes NOT NULL.
Status BindAutoIncrementColumns(const ast::CreateTableStmt& s, catalog::TableDef* def);
// CREATE DATABASE text for SHOW CREATE DATABASE.
std::string ShowCreateDatabaseSql(const std::string& db, bool if_not_exists, const InfoSchemaSource& source);

}  // namespace shale::sql

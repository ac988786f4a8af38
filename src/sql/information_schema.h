// information_schema: read-only virtual tables generated per statement from
// the catalog and the session (MySQL's INFORMATION_SCHEMA). The binder turns
// a FROM reference to information_schema.<table> into a Values plan holding
// the table's rows, so WHERE, joins, ORDER BY and aggregates work on it as
// on any other input.
//
// Tables: SCHEMATA, TABLES, COLUMNS, STATISTICS, KEY_COLUMN_USAGE,
// TABLE_CONSTRAINTS, REFERENTIAL_CONSTRAINTS (empty: no foreign keys),
// VIEWS, ROUTINES, TRIGGERS (empty), PROCESSLIST, ENGINES. Names are
// case-insensitive. Rows of objects the session holds no privilege on are
// left out (InfoSchemaSource::visible).
//
// Thread-safety: stateless functions; the callbacks they are given must be
// safe to call from the statement's thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shale/status.h"
#include "sierra/column.h"
#include "src/catalog/catalog.h"
#include "src/common/value.h"

namespace shale::sql {

inline constexpr std::string_view kInformationSchema = "information_schema";

// What information_schema needs of the session and the node beyond the
// catalog. Every member may be empty.
struct InfoSchemaSource {
  // Whether the session may see database `db` (table empty) or table
  // db.table (some privilege on it). Empty: everything is visible.
  std::function<bool(const std::string& db, const std::string& table)> visible;
  // PROCESSLIST rows as SHOW FULL PROCESSLIST gives them: ID, USER, HOST,
  // DB, COMMAND, TIME, STATE, INFO.
  std::function<std::vector<std::vector<Value>>()> processlist;
  // The number of rows of a table (from its slices), if known.
  std::function<std::optional<uint64_t>(const catalog::TableDef&)> table_rows;
  // Default character set and collation of databases and string columns.
  std::string charset = "utf8mb4";
  std::string collation = "utf8mb4_general_ci";
};

// True for "information_schema" in any letter case.
bool IsInformationSchema(std::string_view db);

// The names of information_schema's tables, upper-case, sorted.
std::vector<std::string> InformationSchemaTables();

// One virtual table: its columns (db, org_table and names filled in) and rows.
struct VirtualTable {
  std::vector<sierra::ColumnInfo> columns;
  std::vector<std::vector<Value>> rows;
};

// The contents of information_schema.<table> (any letter case) for this
// session. ER_UNKNOWN_TABLE (1109) if there is no such table.
Result<VirtualTable> InformationSchemaTable(std::string_view table, const catalog::Catalog& catalog,
                                            const InfoSchemaSource& source);

// The engine every table uses, as SHOW ENGINES and TABLES.ENGINE name it.
inline constexpr std::string_view kEngineName = "Shale";

// SHOW TABLE STATUS columns and one row per visible table of `db` (MySQL's
// columns; Rows from the slices, lengths and times unknown: NULL).
VirtualTable TableStatus(const std::string& db, const catalog::Catalog& catalog,
                         const InfoSchemaSource& source);

}  // namespace shale::sql

#include "src/sql/information_schema.h"

#include <strings.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "src/common/collation.h"
#include "src/common/errors.h"
#include "src/sql/binder.h"

namespace shale::sql {
namespace {

using sierra::ColumnInfo;

struct ColumnSpec {
  const char* name;
  SqlType type;
  bool nullable;
};

SqlType Text(uint32_t n = 64) { return SqlType::Varchar(n); }
SqlType Big() { return SqlType::BigInt(); }

// One information_schema table: its columns and how its rows are made.
struct TableSpec {
  const char* name;
  std::vector<ColumnSpec> columns;
};

// Column lists follow MySQL 8 (names, order); types are the nearest Shale
// types (BIGINT for MySQL's BIGINT UNSIGNED).
const std::vector<TableSpec>& Specs() {
  static const std::vector<TableSpec> specs = {
      {"COLUMNS",
       {{"TABLE_CATALOG", Text(), false},
        {"TABLE_SCHEMA", Text(), false},
        {"TABLE_NAME", Text(), false},
        {"COLUMN_NAME", Text(), false},
        {"ORDINAL_POSITION", Big(), false},
        {"COLUMN_DEFAULT", Text(65535), true},
        {"IS_NULLABLE", Text(3), false},
        {"DATA_TYPE", Text(), false},
        {"CHARACTER_MAXIMUM_LENGTH", Big(), true},
        {"CHARACTER_OCTET_LENGTH", Big(), true},
        {"NUMERIC_PRECISION", Big(), true},
        {"NUMERIC_SCALE", Big(), true},
        {"DATETIME_PRECISION", Big(), true},
        {"CHARACTER_SET_NAME", Text(), true},
        {"COLLATION_NAME", Text(), true},
        {"COLUMN_TYPE", Text(256), false},
        {"COLUMN_KEY", Text(3), false},
        {"EXTRA", Text(256), false},
        {"PRIVILEGES", Text(154), false},
        {"COLUMN_COMMENT", Text(1024), false},
        {"GENERATION_EXPRESSION", Text(1024), false}}},
      {"ENGINES",
       {{"ENGINE", Text(), false},
        {"SUPPORT", Text(8), false},
        {"COMMENT", Text(160), false},
        {"TRANSACTIONS", Text(3), true},
        {"XA", Text(3), true},
        {"SAVEPOINTS", Text(3), true}}},
      {"KEY_COLUMN_USAGE",
       {{"CONSTRAINT_CATALOG", Text(), false},
        {"CONSTRAINT_SCHEMA", Text(), false},
        {"CONSTRAINT_NAME", Text(), false},
        {"TABLE_CATALOG", Text(), false},
        {"TABLE_SCHEMA", Text(), false},
        {"TABLE_NAME", Text(), false},
        {"COLUMN_NAME", Text(), false},
        {"ORDINAL_POSITION", Big(), false},
        {"POSITION_IN_UNIQUE_CONSTRAINT", Big(), true},
        {"REFERENCED_TABLE_SCHEMA", Text(), true},
        {"REFERENCED_TABLE_NAME", Text(), true},
        {"REFERENCED_COLUMN_NAME", Text(), true}}},
      {"PROCESSLIST",
       {{"ID", Big(), false},
        {"USER", Text(32), false},
        {"HOST", Text(261), false},
        {"DB", Text(), true},
        {"COMMAND", Text(16), false},
        {"TIME", SqlType::Int(), false},
        {"STATE", Text(), true},
        {"INFO", Text(65535), true}}},
      {"REFERENTIAL_CONSTRAINTS",
       {{"CONSTRAINT_CATALOG", Text(), false},
        {"CONSTRAINT_SCHEMA", Text(), false},
        {"CONSTRAINT_NAME", Text(), false},
        {"UNIQUE_CONSTRAINT_CATALOG", Text(), false},
        {"UNIQUE_CONSTRAINT_SCHEMA", Text(), false},
        {"UNIQUE_CONSTRAINT_NAME", Text(), true},
        {"MATCH_OPTION", Text(), false},
        {"UPDATE_RULE", Text(), false},
        {"DELETE_RULE", Text(), false},
        {"TABLE_NAME", Text(), false},
        {"REFERENCED_TABLE_NAME", Text(), false}}},
      {"ROUTINES",
       {{"SPECIFIC_NAME", Text(), false},
        {"ROUTINE_CATALOG", Text(), false},
        {"ROUTINE_SCHEMA", Text(), false},
        {"ROUTINE_NAME", Text(), false},
        {"ROUTINE_TYPE", Text(9), false},
        {"DATA_TYPE", Text(), false},
        {"ROUTINE_DEFINITION", Text(65535), true},
        {"ROUTINE_COMMENT", Text(1024), false}}},
      {"SCHEMATA",
       {{"CATALOG_NAME", Text(), false},
        {"SCHEMA_NAME", Text(), false},
        {"DEFAULT_CHARACTER_SET_NAME", Text(), false},
        {"DEFAULT_COLLATION_NAME", Text(), false},
        {"SQL_PATH", Text(512), true}}},
      {"STATISTICS",
       {{"TABLE_CATALOG", Text(), false},
        {"TABLE_SCHEMA", Text(), false},
        {"TABLE_NAME", Text(), false},
        {"NON_UNIQUE", Big(), false},
        {"INDEX_SCHEMA", Text(), false},
        {"INDEX_NAME", Text(), false},
        {"SEQ_IN_INDEX", Big(), false},
        {"COLUMN_NAME", Text(), false},
        {"COLLATION", Text(1), true},
        {"CARDINALITY", Big(), true},
        {"SUB_PART", Big(), true},
        {"PACKED", Text(10), true},
        {"NULLABLE", Text(3), false},
        {"INDEX_TYPE", Text(16), false},
        {"COMMENT", Text(16), false},
        {"INDEX_COMMENT", Text(1024), false},
        {"IS_VISIBLE", Text(3), false},
        {"EXPRESSION", Text(1024), true}}},
      {"TABLES",
       {{"TABLE_CATALOG", Text(), false},
        {"TABLE_SCHEMA", Text(), false},
        {"TABLE_NAME", Text(), false},
        {"TABLE_TYPE", Text(), false},
        {"ENGINE", Text(), true},
        {"VERSION", Big(), true},
        {"ROW_FORMAT", Text(10), true},
        {"TABLE_ROWS", Big(), true},
        {"AVG_ROW_LENGTH", Big(), true},
        {"DATA_LENGTH", Big(), true},
        {"MAX_DATA_LENGTH", Big(), true},
        {"INDEX_LENGTH", Big(), true},
        {"DATA_FREE", Big(), true},
        {"AUTO_INCREMENT", Big(), true},
        {"CREATE_TIME", Text(19), true},
        {"UPDATE_TIME", Text(19), true},
        {"CHECK_TIME", Text(19), true},
        {"TABLE_COLLATION", Text(), true},
        {"CHECKSUM", Big(), true},
        {"CREATE_OPTIONS", Text(256), true},
        {"TABLE_COMMENT", Text(2048), false}}},
      {"TABLE_CONSTRAINTS",
       {{"CONSTRAINT_CATALOG", Text(), false},
        {"CONSTRAINT_SCHEMA", Text(), false},
        {"CONSTRAINT_NAME", Text(), false},
        {"TABLE_SCHEMA", Text(), false},
        {"TABLE_NAME", Text(), false},
        {"CONSTRAINT_TYPE", Text(11), false},
        {"ENFORCED", Text(3), false}}},
      {"TRIGGERS",
       {{"TRIGGER_CATALOG", Text(), false},
        {"TRIGGER_SCHEMA", Text(), false},
        {"TRIGGER_NAME", Text(), false},
        {"EVENT_MANIPULATION", Text(6), false},
        {"EVENT_OBJECT_SCHEMA", Text(), false},
        {"EVENT_OBJECT_TABLE", Text(), false},
        {"ACTION_STATEMENT", Text(65535), false},
        {"ACTION_TIMING", Text(6), false}}},
      {"VIEWS",
       {{"TABLE_CATALOG", Text(), false},
        {"TABLE_SCHEMA", Text(), false},
        {"TABLE_NAME", Text(), false},
        {"VIEW_DEFINITION", Text(65535), false},
        {"CHECK_OPTION", Text(8), false},
        {"IS_UPDATABLE", Text(3), false},
        {"DEFINER", Text(288), false},
        {"SECURITY_TYPE", Text(7), false},
        {"CHARACTER_SET_CLIENT", Text(), false},
        {"COLLATION_CONNECTION", Text(), false}}},
  };
  return specs;
}

const TableSpec* FindSpec(std::string_view name) {
  for (const TableSpec& s : Specs()) {
    if (name.size() == strlen(s.name) && strncasecmp(name.data(), s.name, name.size()) == 0) return &s;
  }
  return nullptr;
}

std::vector<ColumnInfo> ColumnsOf(const TableSpec& spec) {
  std::vector<ColumnInfo> out;
  for (const ColumnSpec& c : spec.columns) {
    ColumnInfo info;
    info.name = c.name;
    info.org_name = c.name;
    info.table = spec.name;
    info.org_table = spec.name;
    info.db = std::string(kInformationSchema);
    info.type = c.type;
    info.nullable = c.nullable;
    out.push_back(std::move(info));
  }
  return out;
}

Value Str(std::string s) { return Value::String(std::move(s)); }
Value Int(int64_t v) { return Value::Int(v); }

bool Visible(const InfoSchemaSource& src, const std::string& db, const std::string& table) {
  return !src.visible || src.visible(db, table);
}

// The databases the session sees, information_schema first (as MySQL).
std::vector<std::string> VisibleDatabases(const catalog::Catalog& catalog, const InfoSchemaSource& src) {
  std::vector<std::string> out = {std::string(kInformationSchema)};
  for (const std::string& db : catalog.ListDatabases()) {
    if (Visible(src, db, "")) out.push_back(db);
  }
  return out;
}

// Every visible table, by database then name.
std::vector<std::shared_ptr<const catalog::TableDef>> VisibleTables(const catalog::Catalog& catalog,
                                                                    const InfoSchemaSource& src) {
  std::vector<std::shared_ptr<const catalog::TableDef>> out;
  for (const std::string& db : catalog.ListDatabases()) {
    auto names = catalog.ListTables(db);
    if (!names.ok()) continue;  // dropped meanwhile
    for (const std::string& name : *names) {
      if (!Visible(src, db, name)) continue;
      auto table = catalog.GetTable(db, name);
      if (table.ok()) out.push_back(*table);
    }
  }
  return out;
}

// "varchar(20)" -> "varchar", "int unsigned" -> "int".
std::string DataType(const SqlType& t) {
  std::string s = t.ToString();
  size_t end = s.find_first_of("( ");
  return end == std::string::npos ? s : s.substr(0, end);
}

// The primary key as shown: hidden row ids are not shown.
bool HasVisiblePrimaryKey(const catalog::TableDef& t) {
  return !t.columns[t.primary.key_columns[0]].hidden;
}

// MySQL's COLUMN_KEY: PRI, UNI (first column of a one-column UNIQUE index)
// or MUL (first column of another index).
std::string ColumnKey(const catalog::TableDef& t, int column) {
  if (HasVisiblePrimaryKey(t) &&
      std::find(t.primary.key_columns.begin(), t.primary.key_columns.end(), column) !=
          t.primary.key_columns.end()) {
    return "PRI";
  }
  std::string key;
  for (const catalog::RepresentationDef& index : t.indexes) {
    if (index.key_columns[0] != column || key == "UNI") continue;
    key = index.unique && index.key_columns.size() == 1 ? "UNI" : "MUL";
  }
  return key;
}

// The next AUTO_INCREMENT value of a table with such a column, else NULL.
Value AutoIncrementValue(const catalog::Catalog& catalog, const catalog::TableDef& t) {
  if (t.AutoIncrementColumn() < 0) return Value::Null();
  auto next = catalog.PeekNextId(t.id, catalog::IdCounter::kAutoIncrement);
  return next.ok() ? Int(*next) : Value::Null();
}

// COLUMNS.EXTRA / SHOW COLUMNS Extra.
std::string ColumnExtra(const catalog::ColumnDef& c) {
  if (c.auto_increment) return "auto_increment";
  // As SHOW COLUMNS and MariaDB (MySQL 8 spells it "DEFAULT_GENERATED on
  // update CURRENT_TIMESTAMP").
  if (c.on_update_now) return "on update " + CurrentTimestampSql(c.type);
  return "";
}

void AddColumnRows(const catalog::TableDef& t, std::vector<std::vector<Value>>* rows) {
  int64_t position = 0;
  for (size_t i = 0; i < t.columns.size(); ++i) {
    const catalog::ColumnDef& c = t.columns[i];
    if (c.hidden) continue;
    ++position;
    const SqlType& type = c.type;
    Value char_len, octet_len, precision, scale, charset, collation;
    if (type.is_string()) {
      char_len = Int(type.length);
      octet_len = Int(type.MaxBytes());
      if (!type.is_binary_string() && type.id != TypeId::kJson) {
        const CollationInfo& coll = CollationById(type.Collation());
        charset = Str(coll.charset);
        collation = Str(coll.name);
      }
    } else if (type.is_integer()) {
      precision = Int(type.DecimalPrecision());
      scale = Int(0);
    } else if (type.is_decimal()) {
      precision = Int(type.length);
      scale = Int(type.scale);
    } else if (type.is_floating()) {
      precision = Int(type.id == TypeId::kDouble ? 22 : 12);
      if (type.scale != kNotFixedDecimals) {
        precision = Int(type.length);
        scale = Int(type.scale);
      }
    }
    Value def = c.default_value && !c.default_value->is_null() ? Str(c.default_value->ToText()) : Value::Null();
    // DEFAULT CURRENT_TIMESTAMP as SHOW COLUMNS shows it (MariaDB's text).
    if (c.default_now) def = Str(CurrentTimestampSql(type));
    // DATETIME_PRECISION: the fsp of DATETIME, TIMESTAMP and TIME (NULL for
    // DATE, as MySQL and MariaDB).
    Value datetime_precision = type.is_temporal() && type.id != TypeId::kDate ? Int(type.scale) : Value::Null();
    rows->push_back({Str("def"), Str(t.db), Str(t.name), Str(c.name), Int(position), def,
                     Str(c.nullable ? "YES" : "NO"), Str(DataType(type)), char_len, octet_len, precision, scale,
                     datetime_precision, charset, collation, Str(type.ToString()),
                     Str(ColumnKey(t, static_cast<int>(i))), Str(ColumnExtra(c)), Str("select,insert,update,references"),
                     Str(""), Str("")});
  }
}

// The columns of an information_schema table as COLUMNS lists them.
void AddVirtualColumnRows(const TableSpec& spec, std::vector<std::vector<Value>>* rows) {
  int64_t position = 0;
  for (const ColumnSpec& c : spec.columns) {
    ++position;
    bool text = c.type.is_string();
    rows->push_back({Str("def"), Str(std::string(kInformationSchema)), Str(spec.name), Str(c.name), Int(position),
                     Value::Null(), Str(c.nullable ? "YES" : "NO"), Str(DataType(c.type)),
                     text ? Int(c.type.length) : Value::Null(),
                     text ? Int(static_cast<int64_t>(c.type.length) * 3) : Value::Null(),
                     text ? Value::Null() : Int(c.type.DecimalPrecision()), text ? Value::Null() : Int(0),
                     Value::Null(), text ? Str("utf8mb3") : Value::Null(),
                     text ? Str("utf8mb3_general_ci") : Value::Null(), Str(c.type.ToString()), Str(""), Str(""),
                     Str("select"), Str(""), Str("")});
  }
}

// The indexes of a table with MySQL's names: PRIMARY first (unless hidden).
std::vector<const catalog::RepresentationDef*> ShownIndexes(const catalog::TableDef& t) {
  std::vector<const catalog::RepresentationDef*> out;
  if (HasVisiblePrimaryKey(t)) out.push_back(&t.primary);
  for (const catalog::RepresentationDef& index : t.indexes) out.push_back(&index);
  return out;
}

Result<std::vector<std::vector<Value>>> Rows(const TableSpec& spec, const catalog::Catalog& catalog,
                                             const InfoSchemaSource& src) {
  std::vector<std::vector<Value>> rows;
  const std::string name = spec.name;
  if (name == "SCHEMATA") {
    for (const std::string& db : VisibleDatabases(catalog, src)) {
      bool is = IsInformationSchema(db);
      rows.push_back({Str("def"), Str(db), Str(is ? "utf8mb3" : src.charset),
                      Str(is ? "utf8mb3_general_ci" : src.collation), Value::Null()});
    }
  } else if (name == "TABLES") {
    for (const std::string& t : InformationSchemaTables()) {
      rows.push_back({Str("def"), Str(std::string(kInformationSchema)), Str(t), Str("SYSTEM VIEW"), Value::Null(),
                      Int(10), Value::Null(), Value::Null(), Value::Null(), Value::Null(), Value::Null(),
                      Value::Null(), Value::Null(), Value::Null(), Value::Null(), Value::Null(), Value::Null(),
                      Str("utf8mb3_general_ci"), Value::Null(), Str(""), Str("")});
    }
    for (const auto& t : VisibleTables(catalog, src)) {
      std::optional<uint64_t> n = src.table_rows ? src.table_rows(*t) : std::nullopt;
      rows.push_back({Str("def"), Str(t->db), Str(t->name), Str("BASE TABLE"), Str(std::string(kEngineName)),
                      Int(10), Str("Dynamic"), n ? Int(static_cast<int64_t>(*n)) : Value::Null(), Value::Null(),
                      Value::Null(), Value::Null(), Value::Null(), Value::Null(), AutoIncrementValue(catalog, *t),
                      Value::Null(), Value::Null(), Value::Null(), Str(src.collation), Value::Null(),
                      Str("SLICES=" + std::to_string(t->primary.slices.size())), Str("")});
    }
  } else if (name == "COLUMNS") {
    for (const std::string& t : InformationSchemaTables()) AddVirtualColumnRows(*FindSpec(t), &rows);
    for (const auto& t : VisibleTables(catalog, src)) AddColumnRows(*t, &rows);
  } else if (name == "STATISTICS") {
    for (const auto& t : VisibleTables(catalog, src)) {
      for (const catalog::RepresentationDef* index : ShownIndexes(*t)) {
        bool unique = index == &t->primary || index->unique;
        for (size_t i = 0; i < index->key_columns.size(); ++i) {
          const catalog::ColumnDef& c = t->columns[index->key_columns[i]];
          rows.push_back({Str("def"), Str(t->db), Str(t->name), Int(unique ? 0 : 1), Str(t->db), Str(index->name),
                          Int(static_cast<int64_t>(i + 1)), Str(c.name), Str("A"), Value::Null(), Value::Null(),
                          Value::Null(), Str(c.nullable ? "YES" : ""), Str("BTREE"), Str(""), Str(""), Str("YES"),
                          Value::Null()});
        }
      }
    }
  } else if (name == "KEY_COLUMN_USAGE" || name == "TABLE_CONSTRAINTS") {
    for (const auto& t : VisibleTables(catalog, src)) {
      for (const catalog::RepresentationDef* index : ShownIndexes(*t)) {
        bool primary = index == &t->primary;
        if (!primary && !index->unique) continue;
        if (name == "TABLE_CONSTRAINTS") {
          rows.push_back({Str("def"), Str(t->db), Str(index->name), Str(t->db), Str(t->name),
                          Str(primary ? "PRIMARY KEY" : "UNIQUE"), Str("YES")});
          continue;
        }
        for (size_t i = 0; i < index->key_columns.size(); ++i) {
          rows.push_back({Str("def"), Str(t->db), Str(index->name), Str("def"), Str(t->db), Str(t->name),
                          Str(t->columns[index->key_columns[i]].name), Int(static_cast<int64_t>(i + 1)),
                          Value::Null(), Value::Null(), Value::Null(), Value::Null()});
        }
      }
    }
  } else if (name == "PROCESSLIST") {
    if (src.processlist) rows = src.processlist();
  } else if (name == "ENGINES") {
    rows.push_back({Str(std::string(kEngineName)), Str("DEFAULT"),
                    Str("Distributed slices of MVCC B+trees on checksummed pages"),
                    // Transactions: MVCC, atomic across slices and nodes; no XA; savepoints.
                    Str("YES"), Str("NO"), Str("YES")});
  }
  // REFERENTIAL_CONSTRAINTS, ROUTINES, TRIGGERS, VIEWS: Shale has none.
  return rows;
}

}  // namespace

bool IsInformationSchema(std::string_view db) {
  return db.size() == kInformationSchema.size() &&
         strncasecmp(db.data(), kInformationSchema.data(), db.size()) == 0;
}

std::vector<std::string> InformationSchemaTables() {
  std::vector<std::string> out;
  for (const TableSpec& s : Specs()) out.push_back(s.name);
  std::sort(out.begin(), out.end());
  return out;
}

Result<VirtualTable> InformationSchemaTable(std::string_view table, const catalog::Catalog& catalog,
                                            const InfoSchemaSource& source) {
  const TableSpec* spec = FindSpec(table);
  if (spec == nullptr) {
    return SqlError(ErrorCode::kUnknownTable, "Unknown table '{}' in information_schema", table);
  }
  VirtualTable out;
  out.columns = ColumnsOf(*spec);
  SHALE_ASSIGN_OR_RETURN(out.rows, Rows(*spec, catalog, source));
  return out;
}

VirtualTable TableStatus(const std::string& db, const catalog::Catalog& catalog, const InfoSchemaSource& source) {
  VirtualTable out;
  auto col = [&](const char* name, SqlType type, bool nullable) {
    ColumnInfo c;
    c.name = name;
    c.type = type;
    c.nullable = nullable;
    out.columns.push_back(std::move(c));
  };
  col("Name", Text(), false);
  col("Engine", Text(), true);
  col("Version", Big(), true);
  col("Row_format", Text(10), true);
  col("Rows", Big(), true);
  col("Avg_row_length", Big(), true);
  col("Data_length", Big(), true);
  col("Max_data_length", Big(), true);
  col("Index_length", Big(), true);
  col("Data_free", Big(), true);
  col("Auto_increment", Big(), true);
  col("Create_time", Text(19), true);
  col("Update_time", Text(19), true);
  col("Check_time", Text(19), true);
  col("Collation", Text(), true);
  col("Checksum", Big(), true);
  col("Create_options", Text(256), true);
  col("Comment", Text(2048), false);
  auto names = catalog.ListTables(db);
  if (!names.ok()) return out;
  for (const std::string& name : *names) {
    if (!Visible(source, db, name)) continue;
    auto t = catalog.GetTable(db, name);
    if (!t.ok()) continue;
    std::optional<uint64_t> n = source.table_rows ? source.table_rows(**t) : std::nullopt;
    out.rows.push_back({Str(name), Str(std::string(kEngineName)), Int(10), Str("Dynamic"),
                        n ? Int(static_cast<int64_t>(*n)) : Value::Null(), Value::Null(), Value::Null(),
                        Value::Null(), Value::Null(), Value::Null(), AutoIncrementValue(catalog, **t),
                        Value::Null(), Value::Null(), Value::Null(), Str(source.collation), Value::Null(),
                        Str("SLICES=" + std::to_string((*t)->primary.slices.size())), Str("")});
  }
  return out;
}

}  // namespace shale::sql

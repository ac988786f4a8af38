#include "src/sql/system_tables.h"

namespace shale::sql {

bool IsSystemDb(std::string_view db) { return db == kSystemDb; }

namespace {

// A column of system.<table>.
sierra::ColumnInfo SystemColumn(const char* table, std::string name, SqlType type, bool nullable) {
  sierra::ColumnInfo c;
  c.name = name;
  c.org_name = std::move(name);
  c.table = table;
  c.org_table = table;
  c.db = std::string(kSystemDb);
  c.type = type;
  c.nullable = nullable;
  return c;
}

}  // namespace

std::vector<sierra::ColumnInfo> SystemSlicesColumns() {
  auto col = [](std::string name, SqlType type, bool nullable) {
    return SystemColumn("slices", std::move(name), type, nullable);
  };
  return {col("db", SqlType::Varchar(64), false),
          col("table_name", SqlType::Varchar(64), false),
          col("representation", SqlType::Varchar(64), false),
          col("slice_id", SqlType::BigInt(), false),
          col("hash_begin", SqlType::Decimal(20, 0), false),
          col("hash_end", SqlType::Decimal(20, 0), false),
          col("replicas", SqlType::Varchar(255), false),
          col("ranking_replica", SqlType::Varchar(64), true),
          col("replica_count", SqlType::BigInt(), false),
          col("wanted_replicas", SqlType::BigInt(), false),
          col("rows", SqlType::BigInt(), true),
          col("bytes", SqlType::BigInt(), true),
          col("building_replicas", SqlType::Varchar(255), false)};
}

std::vector<sierra::ColumnInfo> SystemRebalancerColumns() {
  auto col = [](std::string name, SqlType type, bool nullable) {
    return SystemColumn("rebalancer", std::move(name), type, nullable);
  };
  return {col("task_id", SqlType::BigInt(), false),
          col("kind", SqlType::Varchar(16), false),
          col("db", SqlType::Varchar(64), false),
          col("table_name", SqlType::Varchar(64), false),
          col("representation", SqlType::Varchar(64), false),
          col("slice_id", SqlType::BigInt(), false),
          col("source", SqlType::Varchar(64), false),
          col("target", SqlType::Varchar(64), false),
          col("state", SqlType::Varchar(16), false),
          col("bytes", SqlType::BigInt(), false),
          col("started_ms", SqlType::BigInt(), false),
          col("finished_ms", SqlType::BigInt(), true),
          col("error", SqlType::Varchar(255), false)};
}

std::vector<sierra::ColumnInfo> SystemProfileColumns() {
  auto col = [](std::string name, SqlType type) { return SystemColumn("profile", std::move(name), type, false); };
  return {col("module", SqlType::Varchar(32)),        col("cpu_us", SqlType::BigInt()),
          col("cpu_percent", SqlType::Double()),      col("calls", SqlType::BigInt()),
          col("process_cpu_us", SqlType::BigInt()),   col("span_us", SqlType::BigInt())};
}

std::vector<sierra::ColumnInfo> SystemProtectionColumns() {
  auto col = [](std::string name, SqlType type, bool nullable) {
    return SystemColumn("protection", std::move(name), type, nullable);
  };
  return {col("status", SqlType::Varchar(64), false), col("slices", SqlType::BigInt(), false),
          col("under_protected_slices", SqlType::BigInt(), false), col("lost_slices", SqlType::BigInt(), false)};
}

std::vector<sierra::ColumnInfo> SystemNodesColumns() {
  auto col = [](std::string name, SqlType type, bool nullable) {
    sierra::ColumnInfo c;
    c.name = name;
    c.org_name = std::move(name);
    c.table = "nodes";
    c.org_table = "nodes";
    c.db = std::string(kSystemDb);
    c.type = type;
    c.nullable = nullable;
    return c;
  };
  return {col("node_id", SqlType::Varchar(32), false),
          col("name", SqlType::Varchar(64), false),
          col("address", SqlType::Varchar(255), false),
          col("sql_address", SqlType::Varchar(255), false),
          col("state", SqlType::Varchar(16), false),
          col("epoch", SqlType::BigInt(), false),
          col("is_leader", SqlType::Integer(TypeId::kTinyInt, false), false),
          col("last_heartbeat_ms", SqlType::BigInt(), true)};
}

namespace {

bool ExprReadsOnlySystem(const ast::Expr* e, const std::string& current_db);

bool SelectReadsOnlySystem(const ast::SelectStmt& s, const std::string& current_db) {
  auto ref_ok = [&](const ast::TableRef& ref) {
    if (ref.derived) return SelectReadsOnlySystem(*ref.derived, current_db);
    return IsSystemDb(ref.name.db.empty() ? current_db : ref.name.db);
  };
  if (s.from && !ref_ok(*s.from)) return false;
  for (const ast::JoinClause& j : s.joins) {
    if (!ref_ok(j.table) || !ExprReadsOnlySystem(j.on.get(), current_db)) return false;
  }
  for (const ast::SelectItem& item : s.items) {
    if (!ExprReadsOnlySystem(item.expr.get(), current_db)) return false;
  }
  if (!ExprReadsOnlySystem(s.where.get(), current_db) || !ExprReadsOnlySystem(s.having.get(), current_db)) {
    return false;
  }
  for (const ast::ExprPtr& g : s.group_by) {
    if (!ExprReadsOnlySystem(g.get(), current_db)) return false;
  }
  for (const ast::OrderItem& o : s.order_by) {
    if (!ExprReadsOnlySystem(o.expr.get(), current_db)) return false;
  }
  for (const ast::SelectStmt& term : s.union_terms) {
    if (!SelectReadsOnlySystem(term, current_db)) return false;
  }
  return true;
}

bool ExprReadsOnlySystem(const ast::Expr* e, const std::string& current_db) {
  if (e == nullptr) return true;
  if (e->subquery && !SelectReadsOnlySystem(*e->subquery, current_db)) return false;
  for (const ast::ExprPtr& c : e->children) {
    if (!ExprReadsOnlySystem(c.get(), current_db)) return false;
  }
  return true;
}

}  // namespace

bool ServableWithoutQuorum(const ast::Statement& stmt, const std::string& current_db) {
  if (std::holds_alternative<ast::SetStmt>(stmt) || std::holds_alternative<ast::ShowStmt>(stmt) ||
      std::holds_alternative<ast::UseStmt>(stmt) || std::holds_alternative<ast::TransactionStmt>(stmt)) {
    return true;
  }
  if (const auto* select = std::get_if<ast::SelectStmt>(&stmt)) return SelectReadsOnlySystem(*select, current_db);
  return false;
}

}  // namespace shale::sql

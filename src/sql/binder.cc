#include "src/sql/binder.h"

#include <strings.h>

#include <algorithm>
#include <set>

#include "shale/version.h"
#include "src/common/errors.h"
#include "src/common/like.h"
#include "sierra/eval.h"

namespace shale::sql {
namespace {

using sierra::ColumnInfo;
using sierra::Expr;
using sierra::ExprPtr;
using sierra::LogicalOperator;
using sierra::LogicalPtr;

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

// The names visible to an expression: the columns of at most one table.
struct Scope {
  const LogicalOperator* source = nullptr;  // null: no FROM clause
  std::string table_alias;                  // alias, or the table name
  std::string db;
  const char* clause = "field list";        // for ER_BAD_FIELD_ERROR messages
};

class Binder {
 public:
  explicit Binder(const BindContext& ctx) : ctx_(ctx) {}

  Result<BoundStatement> BindStatement(const ast::Statement& stmt);

 private:
  Result<LogicalPtr> BindSelect(const ast::SelectStmt& s);
  Result<LogicalPtr> BindInsert(const ast::InsertStmt& s);
  Result<BoundStatement> BindCreateTable(const ast::CreateTableStmt& s);
  Result<BoundStatement> BindSet(const ast::SetStmt& s);
  Result<LogicalPtr> BindShow(const ast::ShowStmt& s);

  Result<ExprPtr> BindExpr(const ast::Expr& e, const Scope& scope);
  Result<ExprPtr> BindColumn(const ast::Expr& e, const Scope& scope);
  Result<ExprPtr> BindFunction(const ast::Expr& e, const Scope& scope);
  Result<Value> EvaluateConstant(const ast::Expr& e);
  Result<std::string> ResolveDb(const std::string& db) const;
  Result<std::shared_ptr<const catalog::TableDef>> ResolveTable(const ast::TableName& name) const;

  const BindContext& ctx_;
};

ColumnInfo ExprColumn(std::string name, const ExprPtr& e) {
  ColumnInfo c;
  c.name = std::move(name);
  c.type = e->type;
  c.nullable = e->nullable;
  return c;
}

ColumnInfo TextColumn(std::string name, uint32_t length = 64) {
  ColumnInfo c;
  c.name = std::move(name);
  c.type = SqlType::Varchar(length);
  c.nullable = false;
  return c;
}

// A Values plan from literal rows (SHOW statements).
LogicalPtr ValuesPlan(std::vector<ColumnInfo> columns, const std::vector<std::vector<Value>>& rows) {
  std::vector<std::vector<ExprPtr>> out;
  for (const auto& row : rows) {
    std::vector<ExprPtr> r;
    for (const Value& v : row) r.push_back(Expr::Constant(v));
    out.push_back(std::move(r));
  }
  return LogicalOperator::Values(std::move(columns), std::move(out));
}

Result<BoundStatement> Binder::BindStatement(const ast::Statement& stmt) {
  return std::visit(
      [&](const auto& s) -> Result<BoundStatement> {
        using T = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<T, ast::SelectStmt>) {
          SHALE_ASSIGN_OR_RETURN(auto plan, BindSelect(s));
          return BoundStatement(PlanCmd{std::move(plan)});
        } else if constexpr (std::is_same_v<T, ast::InsertStmt>) {
          SHALE_ASSIGN_OR_RETURN(auto plan, BindInsert(s));
          return BoundStatement(PlanCmd{std::move(plan)});
        } else if constexpr (std::is_same_v<T, ast::CreateTableStmt>) {
          return BindCreateTable(s);
        } else if constexpr (std::is_same_v<T, ast::DropTableStmt>) {
          DropTableCmd cmd;
          cmd.if_exists = s.if_exists;
          for (const auto& t : s.tables) {
            SHALE_ASSIGN_OR_RETURN(std::string db, ResolveDb(t.db));
            cmd.tables.emplace_back(db, t.table);
          }
          return BoundStatement(std::move(cmd));
        } else if constexpr (std::is_same_v<T, ast::CreateDatabaseStmt>) {
          SHALE_RETURN_IF_ERROR(CheckDatabaseName(s.name));
          return BoundStatement(CreateDatabaseCmd{s.name, s.if_not_exists});
        } else if constexpr (std::is_same_v<T, ast::DropDatabaseStmt>) {
          return BoundStatement(DropDatabaseCmd{s.name, s.if_exists});
        } else if constexpr (std::is_same_v<T, ast::UseStmt>) {
          if (!ctx_.catalog->DatabaseExists(s.db)) {
            return SqlError(ErrorCode::kBadDb, "Unknown database '{}'", s.db);
          }
          return BoundStatement(UseCmd{s.db});
        } else if constexpr (std::is_same_v<T, ast::SetStmt>) {
          return BindSet(s);
        } else if constexpr (std::is_same_v<T, ast::ShowStmt>) {
          SHALE_ASSIGN_OR_RETURN(auto plan, BindShow(s));
          return BoundStatement(PlanCmd{std::move(plan)});
        } else {
          static_assert(std::is_same_v<T, ast::TransactionStmt>);
          return BoundStatement(TransactionCmd{s.kind});
        }
      },
      stmt);
}

Result<std::string> Binder::ResolveDb(const std::string& db) const {
  if (!db.empty()) return db;
  if (ctx_.current_db.empty()) return SqlError(ErrorCode::kNoDb, "No database selected");
  return ctx_.current_db;
}

Result<std::shared_ptr<const catalog::TableDef>> Binder::ResolveTable(
    const ast::TableName& name) const {
  SHALE_ASSIGN_OR_RETURN(std::string db, ResolveDb(name.db));
  return ctx_.catalog->GetTable(db, name.table);
}

// ---- SELECT -----------------------------------------------------------------

Result<LogicalPtr> Binder::BindSelect(const ast::SelectStmt& s) {
  LogicalPtr plan;
  Scope scope;
  if (s.from) {
    SHALE_ASSIGN_OR_RETURN(auto table, ResolveTable(s.from->name));
    scope.table_alias = s.from->alias.empty() ? table->name : s.from->alias;
    scope.db = table->db;
    plan = LogicalOperator::Scan(table, s.from->alias);
  } else {
    plan = LogicalOperator::Values({}, {{}});  // one empty row
  }
  scope.source = plan.get();

  if (s.where) {
    Scope where_scope = scope;
    where_scope.clause = "where clause";
    SHALE_ASSIGN_OR_RETURN(ExprPtr pred, BindExpr(*s.where, where_scope));
    plan = LogicalOperator::Filter(std::move(plan), std::move(pred));
    scope.source = plan.get();
  }

  // Select list, with * expanded.
  std::vector<ExprPtr> exprs;
  std::vector<ColumnInfo> columns;
  for (const ast::SelectItem& item : s.items) {
    if (item.expr->kind == ast::ExprKind::kStar) {
      if (!s.from) return SqlError(ErrorCode::kNoTablesUsed, "No tables used");
      if (!item.expr->names.empty() && item.expr->names.back() != scope.table_alias) {
        return SqlError(ErrorCode::kUnknownTable, "Unknown table '{}'", item.expr->names.back());
      }
      const auto& cols = scope.source->columns;
      for (size_t i = 0; i < cols.size(); ++i) {
        exprs.push_back(Expr::ColumnRef(static_cast<int>(i), cols[i].name, cols[i].type,
                                        cols[i].nullable));
        columns.push_back(cols[i]);
      }
      continue;
    }
    SHALE_ASSIGN_OR_RETURN(ExprPtr e, BindExpr(*item.expr, scope));
    ColumnInfo info;
    if (e->kind == sierra::ExprKind::kColumnRef) {
      info = scope.source->columns[e->column];
      info.name = item.expr->names.back();
    } else {
      info = ExprColumn(item.expr->text, e);
    }
    if (!item.alias.empty()) info.name = item.alias;
    exprs.push_back(e);
    columns.push_back(std::move(info));
  }

  // ORDER BY: a position, a select-list alias, or an expression over the source.
  if (!s.order_by.empty()) {
    std::vector<sierra::SortKey> keys;
    Scope order_scope = scope;
    order_scope.clause = "order clause";
    for (const ast::OrderItem& item : s.order_by) {
      const ast::Expr& oe = *item.expr;
      ExprPtr key;
      if (oe.kind == ast::ExprKind::kLiteral && oe.value.is_int()) {
        int64_t pos = oe.value.as_int();
        if (pos < 1 || static_cast<size_t>(pos) > exprs.size()) {
          return SqlError(ErrorCode::kBadField, "Unknown column '{}' in 'order clause'", pos);
        }
        key = exprs[pos - 1];
      } else if (oe.kind == ast::ExprKind::kColumn && oe.names.size() == 1) {
        for (size_t i = 0; i < s.items.size() && !key; ++i) {
          if (!s.items[i].alias.empty() && EqualsIgnoreCase(s.items[i].alias, oe.names[0])) {
            // Items before i may have expanded from '*': find by alias in columns.
            for (size_t j = 0; j < columns.size(); ++j) {
              if (EqualsIgnoreCase(columns[j].name, oe.names[0])) {
                key = exprs[j];
                break;
              }
            }
          }
        }
      }
      if (!key) {
        SHALE_ASSIGN_OR_RETURN(key, BindExpr(oe, order_scope));
      }
      keys.push_back({key, item.desc});
    }
    plan = LogicalOperator::Sort(std::move(plan), std::move(keys));
  }

  plan = LogicalOperator::Project(std::move(plan), std::move(exprs), std::move(columns));
  if (s.distinct) plan = LogicalOperator::Distinct(std::move(plan));
  if (s.limit || s.offset) {
    plan = LogicalOperator::Limit(std::move(plan), s.limit.value_or(UINT64_MAX), s.offset);
  }
  return plan;
}

Result<ExprPtr> Binder::BindColumn(const ast::Expr& e, const Scope& scope) {
  std::string full;
  for (size_t i = 0; i < e.names.size(); ++i) full += (i ? "." : "") + e.names[i];
  auto unknown = [&] {
    return SqlError(ErrorCode::kBadField, "Unknown column '{}' in '{}'", full, scope.clause);
  };
  if (!scope.source || scope.source->columns.empty()) return unknown();
  const std::string& col = e.names.back();
  if (e.names.size() >= 2 && e.names[e.names.size() - 2] != scope.table_alias) return unknown();
  if (e.names.size() == 3 && e.names[0] != scope.db) return unknown();
  const auto& cols = scope.source->columns;
  for (size_t i = 0; i < cols.size(); ++i) {
    if (EqualsIgnoreCase(cols[i].name, col)) {
      return Expr::ColumnRef(static_cast<int>(i), cols[i].name, cols[i].type, cols[i].nullable);
    }
  }
  return unknown();
}

Result<ExprPtr> Binder::BindFunction(const ast::Expr& e, const Scope& scope) {
  auto no_args = [&]() -> Status {
    if (!e.children.empty()) {
      return SqlError(ErrorCode::kWrongParamcountToNativeFct,
                      "Incorrect parameter count in the call to native function '{}'", e.name);
    }
    return Status::OK();
  };
  const std::string& n = e.name;
  if (n == "DATABASE" || n == "SCHEMA") {
    SHALE_RETURN_IF_ERROR(no_args());
    auto c = Expr::Constant(ctx_.current_db.empty() ? Value::Null() : Value::String(ctx_.current_db));
    auto typed = std::make_shared<Expr>(*c);
    typed->type = SqlType::Varchar(64);
    typed->nullable = true;
    return ExprPtr(typed);
  }
  if (n == "VERSION") {
    SHALE_RETURN_IF_ERROR(no_args());
    return Expr::Constant(Value::String(kServerVersion));
  }
  if (n == "CONNECTION_ID") {
    SHALE_RETURN_IF_ERROR(no_args());
    return Expr::Constant(Value::Int(ctx_.connection_id));
  }
  if (n == "USER" || n == "CURRENT_USER" || n == "SESSION_USER" || n == "SYSTEM_USER") {
    SHALE_RETURN_IF_ERROR(no_args());
    return Expr::Constant(Value::String(ctx_.user));
  }
  if (n == "LAST_INSERT_ID") {
    // No AUTO_INCREMENT yet, so no statement has generated an id.
    SHALE_RETURN_IF_ERROR(no_args());
    return Expr::Constant(Value::Int(0));
  }
  (void)scope;
  std::string db = ctx_.current_db.empty() ? "" : ctx_.current_db + ".";
  return SqlError(ErrorCode::kSpDoesNotExist, "FUNCTION {}{} does not exist", db, n);
}

Result<ExprPtr> Binder::BindExpr(const ast::Expr& e, const Scope& scope) {
  switch (e.kind) {
    case ast::ExprKind::kLiteral:
      return Expr::Constant(e.value);
    case ast::ExprKind::kColumn:
      return BindColumn(e, scope);
    case ast::ExprKind::kStar:
    case ast::ExprKind::kDefault:
      return SyntaxError(e.text, 1);
    case ast::ExprKind::kSystemVar: {
      auto it = ctx_.variables->find(e.name);
      if (it == ctx_.variables->end()) {
        return SqlError(ErrorCode::kUnknownSystemVariable, "Unknown system variable '{}'", e.name);
      }
      auto c = std::make_shared<Expr>(*Expr::Constant(it->second));
      if (it->second.is_null()) c->type = SqlType::Varchar(0);
      return ExprPtr(c);
    }
    case ast::ExprKind::kFunction:
      return BindFunction(e, scope);
    case ast::ExprKind::kUnary: {
      SHALE_ASSIGN_OR_RETURN(ExprPtr c, BindExpr(*e.children[0], scope));
      if (e.op == "NOT") return Expr::Not(c);
      if (c->kind == sierra::ExprKind::kConstant && c->constant.is_int() &&
          c->constant.as_int() != INT64_MIN) {
        return Expr::Constant(Value::Int(-c->constant.as_int()));  // a negative literal
      }
      return Expr::Negate(c);
    }
    case ast::ExprKind::kIsNull: {
      SHALE_ASSIGN_OR_RETURN(ExprPtr c, BindExpr(*e.children[0], scope));
      return Expr::IsNull(c, e.negated);
    }
    case ast::ExprKind::kInList: {
      SHALE_ASSIGN_OR_RETURN(ExprPtr c, BindExpr(*e.children[0], scope));
      std::vector<ExprPtr> list;
      for (size_t i = 1; i < e.children.size(); ++i) {
        SHALE_ASSIGN_OR_RETURN(ExprPtr item, BindExpr(*e.children[i], scope));
        list.push_back(item);
      }
      return Expr::InList(c, std::move(list), e.negated);
    }
    case ast::ExprKind::kBetween: {
      SHALE_ASSIGN_OR_RETURN(ExprPtr v, BindExpr(*e.children[0], scope));
      SHALE_ASSIGN_OR_RETURN(ExprPtr lo, BindExpr(*e.children[1], scope));
      SHALE_ASSIGN_OR_RETURN(ExprPtr hi, BindExpr(*e.children[2], scope));
      ExprPtr both = Expr::Logical(sierra::ExprKind::kAnd, Expr::Compare(sierra::CompareOp::kGe, v, lo),
                                   Expr::Compare(sierra::CompareOp::kLe, v, hi));
      return e.negated ? Expr::Not(both) : both;
    }
    case ast::ExprKind::kBinary: {
      SHALE_ASSIGN_OR_RETURN(ExprPtr l, BindExpr(*e.children[0], scope));
      SHALE_ASSIGN_OR_RETURN(ExprPtr r, BindExpr(*e.children[1], scope));
      using sierra::ArithOp;
      using sierra::CompareOp;
      const std::string& op = e.op;
      if (op == "=") return Expr::Compare(CompareOp::kEq, l, r);
      if (op == "<>") return Expr::Compare(CompareOp::kNe, l, r);
      if (op == "<") return Expr::Compare(CompareOp::kLt, l, r);
      if (op == "<=") return Expr::Compare(CompareOp::kLe, l, r);
      if (op == ">") return Expr::Compare(CompareOp::kGt, l, r);
      if (op == ">=") return Expr::Compare(CompareOp::kGe, l, r);
      if (op == "<=>") return Expr::Compare(CompareOp::kNullSafeEq, l, r);
      if (op == "AND") return Expr::Logical(sierra::ExprKind::kAnd, l, r);
      if (op == "OR") return Expr::Logical(sierra::ExprKind::kOr, l, r);
      if (op == "XOR") return Expr::Logical(sierra::ExprKind::kXor, l, r);
      if (op == "+") return Expr::Arith(ArithOp::kAdd, l, r);
      if (op == "-") return Expr::Arith(ArithOp::kSub, l, r);
      if (op == "*") return Expr::Arith(ArithOp::kMul, l, r);
      if (op == "DIV") return Expr::Arith(ArithOp::kIntDiv, l, r);
      if (op == "%") return Expr::Arith(ArithOp::kMod, l, r);
      if (op == "/") {
        return SqlError(ErrorCode::kNotSupportedYet,
                        "This version of Shale doesn't yet support '/' (DECIMAL results); use DIV");
      }
      return Status::Internal("unknown operator " + op);
    }
  }
  return Status::Internal("unknown expression kind");
}

Result<Value> Binder::EvaluateConstant(const ast::Expr& e) {
  Scope none;
  SHALE_ASSIGN_OR_RETURN(ExprPtr bound, BindExpr(e, none));
  return sierra::Evaluate(*bound, {});
}

// ---- INSERT -----------------------------------------------------------------

Result<LogicalPtr> Binder::BindInsert(const ast::InsertStmt& s) {
  SHALE_ASSIGN_OR_RETURN(auto table, ResolveTable(s.table));
  const size_t ncols = table->columns.size();
  std::vector<int> targets;  // value position -> table column
  if (s.columns.empty()) {
    for (size_t i = 0; i < ncols; ++i) targets.push_back(static_cast<int>(i));
  } else {
    std::set<int> seen;
    for (const std::string& name : s.columns) {
      int idx = table->FindColumn(name);
      if (idx < 0) return SqlError(ErrorCode::kBadField, "Unknown column '{}' in 'field list'", name);
      if (!seen.insert(idx).second) {
        return SqlError(ErrorCode::kFieldSpecifiedTwice, "Column '{}' specified twice", name);
      }
      targets.push_back(idx);
    }
  }
  auto default_for = [&](int col) -> Result<ExprPtr> {
    const catalog::ColumnDef& c = table->columns[col];
    if (c.default_value) return Expr::Constant(*c.default_value);
    if (c.nullable) return Expr::Constant(Value::Null());
    return SqlError(ErrorCode::kNoDefaultForField, "Field '{}' doesn't have a default value", c.name);
  };
  std::vector<std::vector<ExprPtr>> rows;
  Scope none;
  for (size_t r = 0; r < s.rows.size(); ++r) {
    const auto& values = s.rows[r];
    if (values.size() != targets.size()) {
      return SqlError(ErrorCode::kWrongValueCount, "Column count doesn't match value count at row {}",
                      r + 1);
    }
    std::vector<ExprPtr> row(ncols);
    for (size_t i = 0; i < values.size(); ++i) {
      if (values[i]->kind == ast::ExprKind::kDefault) {
        SHALE_ASSIGN_OR_RETURN(row[targets[i]], default_for(targets[i]));
      } else {
        SHALE_ASSIGN_OR_RETURN(row[targets[i]], BindExpr(*values[i], none));
      }
    }
    for (size_t c = 0; c < ncols; ++c) {
      if (!row[c]) {
        SHALE_ASSIGN_OR_RETURN(row[c], default_for(static_cast<int>(c)));
      }
    }
    rows.push_back(std::move(row));
  }
  auto scan = LogicalOperator::Scan(table, "");
  LogicalPtr values = LogicalOperator::Values(scan->columns, std::move(rows));
  return LogicalOperator::Insert(table, std::move(values));
}

// ---- CREATE TABLE -------------------------------------------------------------

Result<BoundStatement> Binder::BindCreateTable(const ast::CreateTableStmt& s) {
  CreateTableCmd cmd;
  cmd.if_not_exists = s.if_not_exists;
  cmd.slices = s.slices.value_or(0);
  catalog::TableDef& def = cmd.def;
  SHALE_ASSIGN_OR_RETURN(def.db, ResolveDb(s.table.db));
  def.name = s.table.table;
  SHALE_RETURN_IF_ERROR(CheckTableName(def.name));
  if (!ctx_.catalog->DatabaseExists(def.db)) {
    return SqlError(ErrorCode::kBadDb, "Unknown database '{}'", def.db);
  }
  if (s.columns.empty()) {
    return SqlError(ErrorCode::kTableMustHaveColumns, "A table must have at least 1 column");
  }
  std::vector<std::string> pk = s.primary_key;
  for (const ast::ColumnDefinition& cd : s.columns) {
    if (cd.name.size() > 64) return SqlError(ErrorCode::kTooLongIdent, "Identifier name '{}' is too long", cd.name);
    if (def.FindColumn(cd.name) >= 0) {
      return SqlError(ErrorCode::kDupFieldName, "Duplicate column name '{}'", cd.name);
    }
    catalog::ColumnDef c;
    c.name = cd.name;
    if (cd.is_unsigned) {
      return SqlError(ErrorCode::kNotSupportedYet,
                      "This version of Shale doesn't yet support 'UNSIGNED columns'");
    }
    if (cd.type_name == "INT" || cd.type_name == "INTEGER") {
      c.type = SqlType::Int();
    } else if (cd.type_name == "BIGINT") {
      c.type = SqlType::BigInt();
    } else if (cd.type_name == "VARCHAR") {
      if (!cd.length) {
        return SqlError(ErrorCode::kParse,
                        "You have an error in your SQL syntax; VARCHAR of column '{}' needs a length",
                        cd.name);
      }
      if (*cd.length > 16383) {
        return SqlError(ErrorCode::kTooBigFieldLength,
                        "Column length too big for column '{}' (max = 16383); use BLOB or TEXT instead",
                        cd.name);
      }
      c.type = SqlType::Varchar(*cd.length);
    } else {
      return SqlError(ErrorCode::kNotSupportedYet,
                      "This version of Shale doesn't yet support 'column type {}'", cd.type_name);
    }
    c.nullable = !cd.not_null;
    if (cd.primary_key) {
      if (!pk.empty()) return SqlError(ErrorCode::kMultiplePriKey, "Multiple primary key defined");
      pk.push_back(cd.name);
    }
    if (cd.default_value) {
      auto v = EvaluateConstant(*cd.default_value);
      if (!v.ok()) return SqlError(ErrorCode::kInvalidDefault, "Invalid default value for '{}'", cd.name);
      if (v->is_null()) {
        if (cd.not_null) return SqlError(ErrorCode::kInvalidDefault, "Invalid default value for '{}'", cd.name);
        c.default_value = Value::Null();
      } else {
        auto coerced = CoerceToColumn(*v, c.type, c.name);
        if (!coerced.ok()) {
          return SqlError(ErrorCode::kInvalidDefault, "Invalid default value for '{}'", cd.name);
        }
        c.default_value = *coerced;
      }
    }
    def.columns.push_back(std::move(c));
  }
  if (pk.empty()) {
    return SqlError(ErrorCode::kNotSupportedYet,
                    "This version of Shale doesn't yet support 'tables without a PRIMARY KEY'");
  }
  for (const std::string& name : pk) {
    int idx = def.FindColumn(name);
    if (idx < 0) {
      return SqlError(ErrorCode::kKeyColumnDoesNotExist, "Key column '{}' doesn't exist in table", name);
    }
    if (std::find(def.primary.key_columns.begin(), def.primary.key_columns.end(), idx) !=
        def.primary.key_columns.end()) {
      return SqlError(ErrorCode::kDupFieldName, "Duplicate column name '{}'", name);
    }
    catalog::ColumnDef& c = def.columns[idx];
    if (c.default_value && c.default_value->is_null()) {
      return SqlError(ErrorCode::kInvalidDefault, "Invalid default value for '{}'", c.name);
    }
    c.nullable = false;  // primary key columns are NOT NULL
    def.primary.key_columns.push_back(idx);
  }
  def.primary.name = "PRIMARY";
  def.primary.distribution_columns = 1;
  return BoundStatement(std::move(cmd));
}

// ---- SET ----------------------------------------------------------------------

Result<BoundStatement> Binder::BindSet(const ast::SetStmt& s) {
  SetCmd cmd;
  for (const ast::SetAssignment& a : s.assignments) {
    if (a.scope == "global") {
      return SqlError(ErrorCode::kNotSupportedYet,
                      "This version of Shale doesn't yet support 'SET GLOBAL'");
    }
    auto it = ctx_.variables->find(a.name);
    if (it == ctx_.variables->end()) {
      return SqlError(ErrorCode::kUnknownSystemVariable, "Unknown system variable '{}'", a.name);
    }
    Value v;
    if (a.value->kind == ast::ExprKind::kLiteral && EqualsIgnoreCase(a.value->text, "DEFAULT")) {
      v = it->second;  // DEFAULT: the current (global) value
    } else if (a.value->kind == ast::ExprKind::kColumn && a.value->names.size() == 1) {
      v = Value::String(a.value->names[0]);  // SET sql_mode = ANSI and similar bare words
    } else {
      SHALE_ASSIGN_OR_RETURN(v, EvaluateConstant(*a.value));
    }
    if (a.name == "autocommit") {
      std::string text = v.is_string() ? v.as_string() : "";
      for (char& ch : text) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      if ((v.is_int() && v.as_int() == 1) || text == "ON" || text == "1") {
        v = Value::Int(1);
      } else if ((v.is_int() && v.as_int() == 0) || text == "OFF" || text == "0") {
        v = Value::Int(0);
      } else {
        return SqlError(ErrorCode::kWrongValueForVar, "Variable 'autocommit' can't be set to the value of '{}'",
                        v.ToText());
      }
    }
    cmd.assignments.emplace_back(a.name, std::move(v));
  }
  return BoundStatement(std::move(cmd));
}

// ---- SHOW -----------------------------------------------------------------------

Result<LogicalPtr> Binder::BindShow(const ast::ShowStmt& s) {
  using Kind = ast::ShowStmt::Kind;
  std::vector<std::vector<Value>> rows;
  auto like_ok = [&](const std::string& name) { return !s.like || MatchLike(name, *s.like); };
  switch (s.kind) {
    case Kind::kDatabases: {
      for (const std::string& db : ctx_.catalog->ListDatabases()) {
        if (like_ok(db)) rows.push_back({Value::String(db)});
      }
      std::string name = s.like ? fmt::format("Database ({})", *s.like) : "Database";
      return ValuesPlan({TextColumn(name)}, rows);
    }
    case Kind::kTables: {
      SHALE_ASSIGN_OR_RETURN(std::string db, ResolveDb(s.db));
      SHALE_ASSIGN_OR_RETURN(auto tables, ctx_.catalog->ListTables(db));
      for (const std::string& t : tables) {
        if (!like_ok(t)) continue;
        if (s.full) {
          rows.push_back({Value::String(t), Value::String("BASE TABLE")});
        } else {
          rows.push_back({Value::String(t)});
        }
      }
      std::vector<ColumnInfo> cols = {TextColumn("Tables_in_" + db)};
      if (s.full) cols.push_back(TextColumn("Table_type"));
      return ValuesPlan(std::move(cols), rows);
    }
    case Kind::kVariables: {
      for (const auto& [name, value] : *ctx_.variables) {
        if (like_ok(name)) rows.push_back({Value::String(name), Value::String(value.is_null() ? "" : value.ToText())});
      }
      return ValuesPlan({TextColumn("Variable_name"), TextColumn("Value", 1024)}, rows);
    }
    case Kind::kWarnings: {
      ColumnInfo code;
      code.name = "Code";
      code.type = SqlType::Int();
      code.nullable = false;
      return ValuesPlan({TextColumn("Level", 7), code, TextColumn("Message", 512)}, ctx_.warnings);
    }
    case Kind::kColumns: {
      SHALE_ASSIGN_OR_RETURN(auto table, ResolveTable(s.table));
      for (size_t i = 0; i < table->columns.size(); ++i) {
        const catalog::ColumnDef& c = table->columns[i];
        if (!like_ok(c.name)) continue;
        bool is_pk = std::find(table->primary.key_columns.begin(), table->primary.key_columns.end(),
                               static_cast<int>(i)) != table->primary.key_columns.end();
        Value def = c.default_value && !c.default_value->is_null() ? Value::String(c.default_value->ToText())
                                                                   : Value::Null();
        rows.push_back({Value::String(c.name), Value::String(ColumnTypeSql(c)),
                        Value::String(c.nullable ? "YES" : "NO"), Value::String(is_pk ? "PRI" : ""),
                        def, Value::String("")});
      }
      ColumnInfo def_col = TextColumn("Default");
      def_col.nullable = true;
      return ValuesPlan({TextColumn("Field"), TextColumn("Type"), TextColumn("Null", 3),
                         TextColumn("Key", 3), def_col, TextColumn("Extra")},
                        rows);
    }
    case Kind::kCreateTable: {
      SHALE_ASSIGN_OR_RETURN(auto table, ResolveTable(s.table));
      rows.push_back({Value::String(table->name), Value::String(ShowCreateTableSql(*table))});
      return ValuesPlan({TextColumn("Table"), TextColumn("Create Table", 4096)}, rows);
    }
  }
  return Status::Internal("unknown SHOW");
}

}  // namespace

Result<BoundStatement> Bind(const ast::Statement& stmt, const BindContext& ctx) {
  Binder binder(ctx);
  return binder.BindStatement(stmt);
}

namespace {
Status CheckName(const std::string& name, ErrorCode bad) {
  if (name.empty() || name.find('/') != std::string::npos || name.find('\0') != std::string::npos ||
      name.back() == ' ') {
    return Status::Sql(static_cast<uint16_t>(bad),
                       fmt::format("Incorrect {} name '{}'",
                                   bad == ErrorCode::kWrongDbName ? "database" : "table", name));
  }
  if (name.size() > 64) return SqlError(ErrorCode::kTooLongIdent, "Identifier name '{}' is too long", name);
  return Status::OK();
}
}  // namespace

Status CheckDatabaseName(const std::string& name) { return CheckName(name, ErrorCode::kWrongDbName); }
Status CheckTableName(const std::string& name) { return CheckName(name, ErrorCode::kWrongTableName); }

std::string ColumnTypeSql(const catalog::ColumnDef& c) {
  switch (c.type.id) {
    case TypeId::kInt: return "int";
    case TypeId::kBigInt: return "bigint";
    case TypeId::kVarchar: return fmt::format("varchar({})", c.type.length);
    case TypeId::kNull: break;
  }
  return "null";
}

std::string ShowCreateTableSql(const catalog::TableDef& t) {
  std::string out = fmt::format("CREATE TABLE `{}` (\n", t.name);
  for (const catalog::ColumnDef& c : t.columns) {
    out += fmt::format("  `{}` {}", c.name, ColumnTypeSql(c));
    if (!c.nullable) out += " NOT NULL";
    if (c.default_value) {
      out += c.default_value->is_null() ? " DEFAULT NULL"
                                        : fmt::format(" DEFAULT '{}'", c.default_value->ToText());
    } else if (c.nullable) {
      out += " DEFAULT NULL";
    }
    out += ",\n";
  }
  std::string keys;
  for (size_t i = 0; i < t.primary.key_columns.size(); ++i) {
    keys += fmt::format("{}`{}`", i ? "," : "", t.columns[t.primary.key_columns[i]].name);
  }
  out += fmt::format("  PRIMARY KEY ({})\n) SLICES={}", keys, t.primary.slices.size());
  return out;
}

}  // namespace shale::sql

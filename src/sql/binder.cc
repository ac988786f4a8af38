#include "src/sql/binder.h"

#include <cctype>
#include <strings.h>

#include <algorithm>
#include <set>

#include "shale/version.h"
#include "src/common/collation.h"
#include "src/common/errors.h"
#include "src/common/like.h"
#include "sierra/eval.h"
#include "src/sql/bind_temporal.h"
#include "src/sql/parser.h"
#include "src/common/module_profile.h"

namespace shale::sql {
namespace {

Result<SqlType> BindColumnType(const ast::ColumnDefinition& cd);
std::optional<Result<SqlType>> BindStringColumnType(const ast::ColumnDefinition& cd);
Status ApplyCharset(const ast::ColumnDefinition& cd, SqlType* t, uint16_t table_collation = 0);
Result<uint16_t> ResolveCollation(const std::string& charset, const std::string& collation, bool binary,
                                  uint16_t fallback);

using sierra::ColumnInfo;
using sierra::Expr;
using sierra::ExprPtr;
using sierra::LogicalOperator;
using sierra::LogicalPtr;

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

// One table of a FROM clause: its columns are source->columns[first,
// first + count) of the scope holding it.
struct ScopeTable {
  std::string alias;  // alias, or the table name
  std::string db;
  size_t first = 0;
  size_t count = 0;
  std::shared_ptr<const catalog::TableDef> def = nullptr;  // a base table's definition (else null)
  // Columns joined by USING / NATURAL: an unqualified name and `*` see the
  // coalesced column (of an unnamed ScopeTable) instead of this one.
  std::vector<std::string> using_hidden = {};

  bool UsingHidden(std::string_view name) const {
    for (const std::string& h : using_hidden) {
      if (h.size() == name.size() && strncasecmp(h.data(), name.data(), h.size()) == 0) return true;
    }
    return false;
  }
};

// The names visible to an expression: the columns of the FROM tables, in
// the rows of `source` (a table, or the join of several).
struct Scope {
  const LogicalOperator* source = nullptr;  // null: no FROM clause
  std::vector<ScopeTable> tables;
  const char* clause = "field list";        // for ER_BAD_FIELD_ERROR messages
  // The enclosing query's scope, for a subquery's outer references.
  const Scope* outer = nullptr;
};

// A subquery met while binding a clause: it becomes a kApply operator that
// adds column `column` to the clause's input rows.
struct PendingApply {
  sierra::ApplyKind kind = sierra::ApplyKind::kScalar;
  LogicalPtr plan;
  ExprPtr lhs;
  sierra::CompareOp op = sierra::CompareOp::kEq;
  ColumnInfo column;
};

// Binding state of a query with GROUP BY or aggregates. Expressions above
// the kAggregate operator see only its output: the group_by values, then
// the aggregates' results.
struct AggregateBinding {
  Scope input;                               // the rows being grouped
  std::vector<ExprPtr> group_by;             // over input
  std::vector<std::string> group_names;      // their text, for column names
  std::vector<sierra::AggregateCall> calls;  // over input
  std::vector<std::string> call_names;
  bool inside_call = false;                  // binding an aggregate's argument
  // Select-list aliases HAVING may name: alias -> bound output expression.
  std::vector<std::pair<std::string, ExprPtr>> aliases;

  // The output column of aggregate `call` (named `name`), added unless an
  // equal call is there already.
  int CallColumn(const sierra::AggregateCall& call, const std::string& name) {
    const std::string key = call.ToString();
    size_t index = 0;
    while (index < calls.size() && calls[index].ToString() != key) ++index;
    if (index == calls.size()) {
      calls.push_back(call);
      call_names.push_back(name);
    }
    return static_cast<int>(group_by.size() + index);
  }
  // The output column holding `arg`'s value in the group's first row (an
  // ANY_VALUE call).
  int AnyValueColumn(const ExprPtr& arg, const std::string& name) {
    sierra::AggregateCall call;
    call.kind = sierra::AggregateKind::kAnyValue;
    call.arg = arg;
    call.type = arg->type;
    call.nullable = arg->nullable;
    return CallColumn(call, name);
  }
};

// The smallest and largest column positions `e` reads (min > max: none).
void ColumnRange(const Expr& e, int* min, int* max) {
  if (e.kind == sierra::ExprKind::kColumnRef) {
    *min = std::min(*min, e.column);
    *max = std::max(*max, e.column);
  }
  for (const ExprPtr& c : e.children) ColumnRange(*c, min, max);
}

// `e` with every column reference moved by `delta` positions.
ExprPtr ShiftColumns(const ExprPtr& e, int delta) {
  auto copy = std::make_shared<Expr>(*e);
  if (copy->kind == sierra::ExprKind::kColumnRef && copy->column >= 0) copy->column += delta;
  for (ExprPtr& c : copy->children) c = ShiftColumns(c, delta);
  return copy;
}

ExprPtr AndAll(const std::vector<ExprPtr>& conjuncts) {
  ExprPtr out;
  for (const ExprPtr& c : conjuncts) out = out ? Expr::Logical(sierra::ExprKind::kAnd, out, c) : c;
  return out;
}

// Puts the WHERE conjuncts of a query over joins as low in the left-deep
// join tree BindFrom builds as they can go: a conjunct reading only tables
// 0..k filters the output of join k (or table 0), which commutes with every
// join above it, inner or left; one reading only the right table of an
// inner join filters that table's scan, so it gets an access path.
LogicalPtr PushDownWhere(LogicalPtr plan, const ExprPtr& where, const std::vector<ScopeTable>& tables) {
  std::vector<LogicalOperator*> joins;  // joins[k - 1] joins table k
  for (LogicalOperator* op = plan.get(); op->kind == sierra::LogicalKind::kJoin; op = op->children[0].get()) {
    joins.insert(joins.begin(), op);
  }
  const size_t n = joins.size();
  std::vector<std::vector<ExprPtr>> above(n + 1), on_right(n + 1);
  std::vector<ExprPtr> conjuncts;
  sierra::SplitConjuncts(where, &conjuncts);
  for (const ExprPtr& c : conjuncts) {
    int min = INT32_MAX, max = -1;
    ColumnRange(*c, &min, &max);
    size_t k = 0;
    while (k < n && max >= static_cast<int>(tables[k].first + tables[k].count)) ++k;
    bool inner = k >= 1 && joins[k - 1]->join_kind == sierra::JoinKind::kInner;
    if (inner && min >= static_cast<int>(tables[k].first)) {
      on_right[k].push_back(ShiftColumns(c, -static_cast<int>(tables[k].first)));
    } else {
      above[k].push_back(c);
    }
  }
  for (size_t k = 1; k <= n; ++k) {
    if (on_right[k].empty()) continue;
    LogicalPtr& right = joins[k - 1]->children[1];
    right = LogicalOperator::Filter(std::move(right), AndAll(on_right[k]));
  }
  for (size_t k = 0; k <= n; ++k) {
    if (above[k].empty()) continue;
    if (k >= 1 && joins[k - 1]->join_kind == sierra::JoinKind::kInner) {
      // Filtering an inner join's output is joining with the extra condition.
      std::vector<ExprPtr> all;
      if (joins[k - 1]->predicate) all.push_back(joins[k - 1]->predicate);
      all.insert(all.end(), above[k].begin(), above[k].end());
      joins[k - 1]->predicate = AndAll(all);
      continue;
    }
    // Above table 0 or a left join: a filter on the input of the next join.
    if (k == n) {
      plan = LogicalOperator::Filter(std::move(plan), AndAll(above[k]));
    } else {
      LogicalPtr& input = joins[k]->children[0];
      input = LogicalOperator::Filter(std::move(input), AndAll(above[k]));
    }
  }
  return plan;
}

// `e` with every (non-outer) column reference c moved to map[c].
// `e` with column references at or above `from` moved to start at `to`.
ExprPtr RebaseColumns(const ExprPtr& e, int from, int to) {
  auto copy = std::make_shared<Expr>(*e);
  if (copy->kind == sierra::ExprKind::kColumnRef && copy->column >= from) copy->column = copy->column - from + to;
  for (ExprPtr& c : copy->children) c = RebaseColumns(c, from, to);
  return copy;
}

ExprPtr RemapColumns(const ExprPtr& e, const std::vector<int>& map) {
  auto copy = std::make_shared<Expr>(*e);
  if (copy->kind == sierra::ExprKind::kColumnRef && copy->column >= 0) copy->column = map[copy->column];
  for (ExprPtr& c : copy->children) c = RemapColumns(c, map);
  return copy;
}

// The tables (indexes into `tables`) whose columns `e` reads.
std::set<size_t> TablesRead(const Expr& e, const std::vector<ScopeTable>& tables) {
  std::set<size_t> out;
  if (e.kind == sierra::ExprKind::kColumnRef && e.column >= 0) {
    for (size_t t = 0; t < tables.size(); ++t) {
      if (static_cast<size_t>(e.column) >= tables[t].first &&
          static_cast<size_t>(e.column) < tables[t].first + tables[t].count) {
        out.insert(t);
      }
    }
  }
  for (const ExprPtr& c : e.children) {
    auto sub = TablesRead(*c, tables);
    out.insert(sub.begin(), sub.end());
  }
  return out;
}

// Joins the tables of a FROM clause of inner joins only (the left-deep tree
// BindFrom built, in the order written) in an order where each next table
// is connected to the ones before it by an equality of the WHERE or ON
// conjuncts when one is, so those equalities become hash-join keys instead
// of filters over cross products; then pushes the conjuncts down
// (PushDownWhere) and projects the columns back into the written order, so
// the rest of the query binds as written. Plans with outer joins, or whose
// written order already works, only get the push-down.
LogicalPtr JoinInConnectedOrder(LogicalPtr plan, std::vector<ExprPtr> conjuncts,
                                const std::vector<ScopeTable>& tables) {
  std::vector<LogicalOperator*> joins;  // joins[k - 1] joins table k
  for (LogicalOperator* op = plan.get(); op->kind == sierra::LogicalKind::kJoin; op = op->children[0].get()) {
    joins.insert(joins.begin(), op);
  }
  const size_t n = tables.size();
  bool all_inner = joins.size() + 1 == n;
  for (LogicalOperator* j : joins) all_inner &= j->join_kind == sierra::JoinKind::kInner;
  if (!all_inner || n < 3) return conjuncts.empty() ? std::move(plan) : PushDownWhere(std::move(plan), AndAll(conjuncts), tables);
  for (LogicalOperator* j : joins) {
    if (j->predicate) sierra::SplitConjuncts(j->predicate, &conjuncts);
  }
  // Which pairs of tables an equality connects.
  std::vector<std::set<size_t>> eq_tables;
  for (const ExprPtr& c : conjuncts) {
    if (c->kind != sierra::ExprKind::kCompare || c->compare_op != sierra::CompareOp::kEq) continue;
    auto l = TablesRead(*c->children[0], tables);
    auto r = TablesRead(*c->children[1], tables);
    if (l.size() == 1 && r.size() == 1 && *l.begin() != *r.begin()) eq_tables.push_back({*l.begin(), *r.begin()});
  }
  std::vector<size_t> order = {0};
  std::vector<bool> placed(n, false);
  placed[0] = true;
  while (order.size() < n) {
    size_t pick = n;
    for (size_t t = 0; t < n && pick == n; ++t) {
      if (placed[t]) continue;
      for (const auto& pair : eq_tables) {
        if (pair.count(t) && std::any_of(pair.begin(), pair.end(), [&](size_t o) { return o != t && placed[o]; })) {
          pick = t;
          break;
        }
      }
    }
    if (pick == n) {
      for (size_t t = 0; t < n && pick == n; ++t) {
        if (!placed[t]) pick = t;
      }
    }
    placed[pick] = true;
    order.push_back(pick);
  }
  bool identity = true;
  for (size_t i = 0; i < n; ++i) identity &= order[i] == i;
  // Detach the tables' plans and clear the join predicates (now conjuncts).
  std::vector<LogicalPtr> inputs(n);
  for (size_t k = n - 1; k >= 1; --k) inputs[k] = std::move(joins[k - 1]->children[1]);
  inputs[0] = std::move(joins[0]->children[0]);
  std::vector<ColumnInfo> written = plan->columns;
  std::vector<int> map(written.size());
  std::vector<ScopeTable> reordered;
  size_t width = 0;
  for (size_t t : order) {
    ScopeTable st = tables[t];
    for (size_t i = 0; i < st.count; ++i) map[st.first + i] = static_cast<int>(width + i);
    st.first = width;
    width += st.count;
    reordered.push_back(st);
  }
  LogicalPtr joined = std::move(inputs[order[0]]);
  for (size_t i = 1; i < n; ++i) {
    joined = LogicalOperator::Join(sierra::JoinKind::kInner, std::move(joined), std::move(inputs[order[i]]), nullptr);
  }
  for (ExprPtr& c : conjuncts) c = RemapColumns(c, map);
  if (!conjuncts.empty()) joined = PushDownWhere(std::move(joined), AndAll(conjuncts), reordered);
  if (identity) return joined;
  std::vector<ExprPtr> exprs;
  for (size_t i = 0; i < written.size(); ++i) {
    exprs.push_back(Expr::ColumnRef(map[i], written[i].name, written[i].type, written[i].nullable));
  }
  return LogicalOperator::Project(std::move(joined), std::move(exprs), std::move(written));
}

ast::ExprPtr CloneAst(const ast::Expr& e) { return ast::Clone(e); }

bool ContainsAggregate(const ast::Expr& e) {
  if (e.kind == ast::ExprKind::kFunction && IsAggregateFunction(e.name)) return true;
  for (const auto& c : e.children) {
    if (ContainsAggregate(*c)) return true;
  }
  return false;
}

bool ContainsSubquery(const ast::Expr& e) {
  if (e.kind == ast::ExprKind::kSubquery) return true;
  for (const auto& c : e.children) {
    if (ContainsSubquery(*c)) return true;
  }
  return false;
}

// A hexadecimal or bit literal (0x41, X'41', b'1').
bool IsHexLiteral(const ast::Expr& e) { return e.kind == ast::ExprKind::kLiteral && e.hex_number; }

// A hexadecimal or bit literal where a number is wanted: the unsigned
// integer its bytes spell, big-endian, of the last 8 bytes when there are
// more (MariaDB's Item_hex_hybrid::val_int); beyond 2^63-1 an exact
// DECIMAL, as the bit operators give BIGINT UNSIGNED values.
ExprPtr HexLiteralNumber(const ast::Expr& e) {
  const std::string& bytes = e.value.as_string();
  uint64_t v = 0;
  for (size_t i = bytes.size() > 8 ? bytes.size() - 8 : 0; i < bytes.size(); ++i) {
    v = (v << 8) | static_cast<unsigned char>(bytes[i]);
  }
  if (v <= static_cast<uint64_t>(INT64_MAX)) return Expr::Constant(Value::Int(static_cast<int64_t>(v)));
  return Expr::Constant(Value::Dec(Decimal(static_cast<__int128>(v), 0)));
}

// Whether values of type `t` are numbers in comparisons (so a hex literal
// compared with them is read as its number: 0x41 = 65).
bool ComparesAsNumber(const SqlType& t) { return t.is_numeric() || t.id == TypeId::kYear; }

class Binder {
 public:
  explicit Binder(const BindContext& ctx) : ctx_(ctx) {}

  Result<BoundStatement> BindStatement(const ast::Statement& stmt);

 private:
  Result<LogicalPtr> BindSelect(const ast::SelectStmt& s);
  Result<LogicalPtr> BindUnion(const ast::SelectStmt& s);
  Result<ExprPtr> BindSubquery(const ast::Expr& e, const Scope& scope);
  // Collects the subqueries of the clauses bound until the matching
  // FinishApplies, as columns after the `base` columns of the clause input.
  void StartApplies(size_t base) {
    applies_.clear();
    apply_base_ = base;
    collecting_applies_ = true;
  }
  // `plan` with an Apply per subquery collected since StartApplies.
  LogicalPtr FinishApplies(LogicalPtr plan) {
    collecting_applies_ = false;
    for (PendingApply& a : applies_) {
      bool correlated = sierra::HasOuterRefs(*a.plan);
      plan = LogicalOperator::Apply(a.kind, std::move(plan), std::move(a.plan), a.lhs, a.op, correlated,
                                    a.column);
    }
    applies_.clear();
    return plan;
  }
  // UPDATE ... SET with subqueries: collects their Applies from
  // construction (when an assignment has one) to Finish, which puts them
  // over the rows to change; the Apply columns follow the `width` row
  // columns. Collection stops on every path out.
  class SetApplies {
   public:
    SetApplies(Binder* b, const std::vector<ast::Assignment>& assignments, size_t width) : b_(b) {
      for (const ast::Assignment& a : assignments) active_ |= ContainsSubquery(*a.value);
      if (active_) b_->StartApplies(width);
    }
    ~SetApplies() {
      if (active_) b_->collecting_applies_ = false;
    }
    LogicalPtr Finish(LogicalPtr rows) {
      if (!active_) return rows;
      active_ = false;
      return b_->FinishApplies(std::move(rows));
    }

   private:
    Binder* b_;
    bool active_ = false;
  };
  // A LEFT JOIN whose ON (`on`, bound over the joined rows, the collected
  // subqueries' columns numbered from `apply_base`) has subqueries: the
  // conjuncts with subqueries filter the right side before the join (the
  // subqueries become Applies over the right rows), the others are the join
  // predicate. 1235 when such a conjunct or subquery reads the left side.
  Status LeftJoinOnSubqueries(LogicalOperator* join, const ExprPtr& on, int apply_base);
  Result<LogicalPtr> BindInsert(const ast::InsertStmt& s);
  Result<LogicalPtr> BindUpdate(const ast::UpdateStmt& s);
  Result<LogicalPtr> BindDelete(const ast::DeleteStmt& s);
  // Multi-table UPDATE/DELETE: the joined rows of `first` and `joins` that
  // `where` keeps, filling scope->tables (as a SELECT's FROM and WHERE).
  Result<LogicalPtr> BindJoinedRows(const ast::TableRef& first, const std::vector<ast::JoinClause>& joins,
                                    const ast::Expr* where, Scope* scope);
  Result<LogicalPtr> BindMultiUpdate(const ast::UpdateStmt& s);
  Result<LogicalPtr> BindMultiDelete(const ast::DeleteStmt& s);
  // Scan [-> Filter] [-> Sort] [-> Limit] over one table: the rows an UPDATE
  // or DELETE changes, as full table rows.
  Result<LogicalPtr> BindTargetRows(const ast::TableRef& ref, const ast::Expr* where,
                                    const std::vector<ast::OrderItem>& order_by,
                                    std::optional<uint64_t> limit, Scope* scope);
  Result<BoundStatement> BindCreateTable(const ast::CreateTableStmt& s);
  // A column definition as CREATE TABLE would make it (ALTER TABLE).
  Result<catalog::ColumnDef> BindColumnDefinition(const ast::ColumnDefinition& cd, const std::string& db);
  Result<BoundStatement> BindAlterTable(const ast::AlterTableStmt& s);
  Result<BoundStatement> BindSet(const ast::SetStmt& s);
  Result<LogicalPtr> BindShow(const ast::ShowStmt& s);

  Result<ExprPtr> BindExpr(const ast::Expr& e, const Scope& scope);
  Result<ExprPtr> BindExprInner(const ast::Expr& e, const Scope& scope);
  // BindExpr where a number is wanted (arithmetic, NOT, CAST to a number):
  // a hex literal is its integer.
  Result<ExprPtr> BindNumeric(const ast::Expr& e, const Scope& scope) {
    if (IsHexLiteral(e)) return HexLiteralNumber(e);
    return BindExpr(e, scope);
  }
  // BindExpr of a value stored into a column of type `t` (INSERT, UPDATE):
  // a hex literal is its integer for numeric columns (INSERT INTO t(i)
  // VALUES (0x41) stores 65), its bytes otherwise.
  Result<ExprPtr> BindForColumn(const ast::Expr& e, const Scope& scope, const SqlType& t) {
    if (IsHexLiteral(e) && ComparesAsNumber(t)) return HexLiteralNumber(e);
    return BindExpr(e, scope);
  }
  // The bound operands *l of `a` and *r of `b` of a comparison: a hex
  // literal compared with a number is its integer, with anything else (a
  // string, another hex literal) its bytes, as MySQL. (Only constants are
  // replaced, so nothing bound is bound twice.)
  static void HexComparands(const ast::Expr& a, const ast::Expr& b, ExprPtr* l, ExprPtr* r) {
    if (IsHexLiteral(a) && !IsHexLiteral(b) && ComparesAsNumber((*r)->type)) *l = HexLiteralNumber(a);
    if (IsHexLiteral(b) && !IsHexLiteral(a) && ComparesAsNumber((*l)->type)) *r = HexLiteralNumber(b);
  }
  // With agg_ set: an expression without aggregates, as seen above the
  // aggregate (a group value, a constant, or a column's value in the group).
  Result<ExprPtr> BindGrouped(const ast::Expr& e, const char* clause);
  // With agg_ set: the column of the aggregate's rows holding input column
  // `column`: its GROUP BY column, else (MariaDB's default) an ANY_VALUE
  // aggregate of it, added if needed.
  int GroupRowColumn(int column);
  Result<ExprPtr> BindAggregateCall(const ast::Expr& e);
  // FROM: the tables and joins, filling scope->tables.
  Result<LogicalPtr> BindFrom(const ast::SelectStmt& s, Scope* scope);
  Result<LogicalPtr> BindFromTree(const ast::TableRef& first, const std::vector<ast::JoinClause>& joins,
                                  Scope* scope);
  // `left` joined with `right` (whose tables are scope->tables from
  // `left_tables` on) by a RIGHT join, USING or NATURAL: the columns stay in
  // written order, USING columns are coalesced into an unnamed scope table
  // (src/sql/bind_join.cc).
  Result<LogicalPtr> BindExtendedJoin(const ast::JoinClause& j, LogicalPtr left, LogicalPtr right,
                                      size_t left_tables, Scope* scope);
  // The output column of select item `e` bound to `bound`.
  ColumnInfo ItemColumn(const ast::Expr& e, const ExprPtr& bound, const Scope& input);
  Result<ExprPtr> BindColumn(const ast::Expr& e, const Scope& scope);
  Result<ExprPtr> BindFunction(const ast::Expr& e, const Scope& scope);
  Result<Value> EvaluateConstant(const ast::Expr& e);
  Result<std::string> ResolveDb(const std::string& db) const;
  Result<std::shared_ptr<const catalog::TableDef>> ResolveTable(const ast::TableName& name) const;

  const BindContext& ctx_;
  // User variables the statement assigns (@x := expr), as far as bound:
  // reads of them after that are per row, not the value at bind time.
  std::set<std::string> assigned_user_vars_;
  AggregateBinding* agg_ = nullptr;  // set while binding above an aggregate
  const Scope* outer_ = nullptr;     // set while binding a subquery
  std::vector<PendingApply> applies_;
  size_t apply_base_ = 0;
  bool collecting_applies_ = false;  // subqueries are allowed in the clause being bound
  // The FROM clause has RIGHT/NATURAL/USING or parenthesized joins, so it
  // is not the left-deep chain PushDownWhere/JoinInConnectedOrder reorder.
  bool extended_from_ = false;
  // Binding the select list, HAVING or ORDER BY of a query with an
  // aggregate: subqueries are allowed there (their Applies go above the
  // Aggregate, and a correlated one reads the group rows: GroupRowColumn).
  bool above_aggregate_ = false;
  // Binding an aggregate call's argument (below the aggregate).
  bool in_aggregate_arg_ = false;
  // ON DUPLICATE KEY UPDATE: VALUES(c) reads column c of the inserted row,
  // which follows the existing row at this offset (-1: VALUES() not allowed).
  int values_offset_ = -1;
};

ColumnInfo ExprColumn(std::string name, const ExprPtr& e) {
  ColumnInfo c;
  c.name = std::move(name);
  c.type = e->type;
  c.nullable = e->nullable;
  return c;
}

// GROUP BY g1..gn WITH ROLLUP over `input`: the groups of every prefix
// g1..gk (k = n..0) with the columns after the prefix NULL, sorted as MySQL
// returns them — by g1, each group's super-aggregate row after its rows,
// and so on down, the grand total last. The output has the aggregate's
// `columns` (group values, then `calls`) and then n hidden level columns
// (1 where g_i is rolled up) that the sort orders by.
sierra::LogicalPtr RollupPlan(sierra::LogicalPtr input, const std::vector<ExprPtr>& group_by,
                              const std::vector<sierra::AggregateCall>& calls, std::vector<ColumnInfo> columns) {
  const size_t n = group_by.size();
  for (size_t i = 0; i < n; ++i) columns[i].nullable = true;
  std::vector<ColumnInfo> out_columns = columns;
  for (size_t i = 0; i < n; ++i) {
    ColumnInfo level;
    level.name = fmt::format("#rollup_level{}", i);
    level.type = SqlType::BigInt();
    level.nullable = false;
    level.hidden = true;
    out_columns.push_back(std::move(level));
  }
  auto column = [](int i, const ColumnInfo& c) { return Expr::ColumnRef(i, c.name, c.type, c.nullable); };
  std::vector<sierra::LogicalPtr> terms;
  for (size_t k = n + 1; k-- > 0;) {
    std::vector<ExprPtr> keys(group_by.begin(), group_by.begin() + static_cast<std::ptrdiff_t>(k));
    std::vector<ColumnInfo> level_columns(columns.begin(), columns.begin() + static_cast<std::ptrdiff_t>(k));
    if (k == 0) {
      // The grand total groups by a constant, so no input gives no row (MySQL).
      keys.push_back(Expr::Constant(Value::Int(0)));
      level_columns.push_back(ExprColumn("0", keys.back()));
    }
    const int width = static_cast<int>(keys.size());
    level_columns.insert(level_columns.end(), columns.begin() + static_cast<std::ptrdiff_t>(n), columns.end());
    auto agg = sierra::LogicalOperator::Aggregate(k == 0 ? std::move(input) : input->Clone(), std::move(keys), calls,
                                                  level_columns);
    std::vector<ExprPtr> exprs;
    for (size_t i = 0; i < n; ++i) {
      if (i < k) {
        exprs.push_back(column(static_cast<int>(i), columns[i]));
      } else {
        auto null = std::make_shared<sierra::Expr>(*Expr::Constant(Value::Null()));
        null->type = columns[i].type;
        exprs.push_back(std::move(null));
      }
    }
    for (size_t j = 0; j < calls.size(); ++j) exprs.push_back(column(width + static_cast<int>(j), columns[n + j]));
    for (size_t i = 0; i < n; ++i) exprs.push_back(Expr::Constant(Value::Int(i >= k ? 1 : 0)));
    terms.push_back(sierra::LogicalOperator::Project(std::move(agg), std::move(exprs), out_columns));
  }
  std::vector<sierra::SortKey> order;
  const int level_base = static_cast<int>(columns.size());
  for (size_t i = 0; i < n; ++i) {
    order.push_back({column(level_base + static_cast<int>(i), out_columns[level_base + i]), false});
    order.push_back({column(static_cast<int>(i), columns[i]), false});
  }
  return sierra::LogicalOperator::Sort(sierra::LogicalOperator::Union(std::move(terms), out_columns),
                                       std::move(order));
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
        } else if constexpr (std::is_same_v<T, ast::UpdateStmt>) {
          SHALE_ASSIGN_OR_RETURN(auto plan, BindUpdate(s));
          return BoundStatement(PlanCmd{std::move(plan)});
        } else if constexpr (std::is_same_v<T, ast::DeleteStmt>) {
          SHALE_ASSIGN_OR_RETURN(auto plan, BindDelete(s));
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
          if (IsInformationSchema(s.db)) return BoundStatement(UseCmd{std::string(kInformationSchema)});
          if (!ctx_.catalog->DatabaseExists(s.db)) {
            return SqlError(ErrorCode::kBadDb, "Unknown database '{}'", s.db);
          }
          return BoundStatement(UseCmd{s.db});
        } else if constexpr (std::is_same_v<T, ast::SetStmt>) {
          return BindSet(s);
        } else if constexpr (std::is_same_v<T, ast::ShowStmt>) {
          SHALE_ASSIGN_OR_RETURN(auto plan, BindShow(s));
          if (s.where) {
            // SHOW ... WHERE: a filter over the shown rows, whose columns
            // are the names it sees (as MySQL, which runs SHOW as a query
            // of an information_schema table).
            Scope scope;
            scope.source = plan.get();
            scope.clause = "where clause";
            scope.tables = {{"", "", 0, plan->columns.size()}};
            SHALE_ASSIGN_OR_RETURN(ExprPtr where, BindExpr(*s.where, scope));
            plan = LogicalOperator::Filter(std::move(plan), std::move(where));
          }
          return BoundStatement(PlanCmd{std::move(plan)});
        } else if constexpr (std::is_same_v<T, ast::ExplainStmt>) {
          LogicalPtr plan;
          if (s.update) {
            SHALE_ASSIGN_OR_RETURN(plan, BindUpdate(*s.update));
          } else if (s.del) {
            SHALE_ASSIGN_OR_RETURN(plan, BindDelete(*s.del));
          } else {
            SHALE_ASSIGN_OR_RETURN(plan, BindSelect(*s.select));
          }
          return BoundStatement(ExplainCmd{std::move(plan), s.tree, s.analyze});
        } else if constexpr (std::is_same_v<T, ast::AlterTableStmt>) {
          return BindAlterTable(s);
        } else if constexpr (std::is_same_v<T, ast::RenameTableStmt>) {
          RenameTableCmd cmd;
          for (const auto& [from, to] : s.renames) {
            SHALE_ASSIGN_OR_RETURN(std::string from_db, ResolveDb(from.db));
            SHALE_ASSIGN_OR_RETURN(std::string to_db, ResolveDb(to.db));
            SHALE_RETURN_IF_ERROR(CheckTableName(to.table));
            cmd.renames.push_back({{from_db, from.table}, {to_db, to.table}});
          }
          return BoundStatement(std::move(cmd));
        } else if constexpr (std::is_same_v<T, ast::AdminStmt>) {
          // Run by exec::Session itself (session_admin.cc), never bound.
          return Status::Internal("account and thread statements are not bound");
        } else {
          static_assert(std::is_same_v<T, ast::TransactionStmt>);
          return BoundStatement(TransactionCmd{s.kind, s.read_only, s.read_write, s.consistent_snapshot, s.savepoint});
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
  if (IsInformationSchema(db)) {
    // Only read (BindFrom); writing or altering it is refused, as in MySQL.
    const size_t at = ctx_.user.rfind('@');
    return SqlError(ErrorCode::kDbAccessDenied, "Access denied for user '{}'@'{}' to database '{}'",
                    ctx_.user.substr(0, at), at == std::string::npos ? "" : ctx_.user.substr(at + 1),
                    kInformationSchema);
  }
  return ctx_.catalog->GetTable(db, name.table);
}

// ---- SELECT -----------------------------------------------------------------

Result<LogicalPtr> Binder::BindFrom(const ast::SelectStmt& s, Scope* scope) {
  extended_from_ = false;
  return BindFromTree(*s.from, s.joins, scope);
}

Result<LogicalPtr> Binder::BindFromTree(const ast::TableRef& first, const std::vector<ast::JoinClause>& joins,
                                        Scope* scope) {
  size_t width = 0;
  auto add = [&](const ast::TableRef& ref) -> Result<LogicalPtr> {
    if (ref.nested) {
      // A parenthesized join: bound on its own (its ON clauses see its
      // tables), then its tables join the scope after those before it.
      Scope sub;
      sub.outer = scope->outer;
      SHALE_ASSIGN_OR_RETURN(LogicalPtr plan, BindFromTree(ref.nested->first, ref.nested->joins, &sub));
      for (ScopeTable t : sub.tables) {
        for (const ScopeTable& o : scope->tables) {
          if (!t.alias.empty() && o.alias == t.alias) {
            return SqlError(ErrorCode::kNonUniqTable, "Not unique table/alias: '{}'", t.alias);
          }
        }
        t.first += width;
        scope->tables.push_back(std::move(t));
      }
      width += plan->columns.size();
      extended_from_ = true;
      return plan;
    }
    if (!ref.derived && ctx_.system_table && IsSystemDb(ref.name.db.empty() ? ctx_.current_db : ref.name.db)) {
      // A system table: its rows, generated now, as a Values input.
      SHALE_ASSIGN_OR_RETURN(GeneratedTable t, ctx_.system_table(ref.name.table));
      std::string alias = ref.alias.empty() ? ref.name.table : ref.alias;
      for (const ScopeTable& st : scope->tables) {
        if (st.alias == alias) return SqlError(ErrorCode::kNonUniqTable, "Not unique table/alias: '{}'", alias);
      }
      for (ColumnInfo& c : t.columns) c.table = alias;
      LogicalPtr values = ValuesPlan(std::move(t.columns), t.rows);
      scope->tables.push_back({alias, std::string(kSystemDb), width, values->columns.size()});
      width += values->columns.size();
      return values;
    }
    if (ref.derived) {
      // A derived table: its own query, which sees no outer names.
      Binder sub(ctx_);
      SHALE_ASSIGN_OR_RETURN(LogicalPtr plan, sub.BindSelect(*ref.derived));
      for (const ScopeTable& t : scope->tables) {
        if (t.alias == ref.alias) return SqlError(ErrorCode::kNonUniqTable, "Not unique table/alias: '{}'", ref.alias);
      }
      for (size_t i = 0; i < plan->columns.size(); ++i) {
        ColumnInfo& c = plan->columns[i];
        for (size_t j = 0; j < i; ++j) {
          if (EqualsIgnoreCase(plan->columns[j].name, c.name)) {
            return SqlError(ErrorCode::kDupFieldName, "Duplicate column name '{}'", c.name);
          }
        }
        c.table = ref.alias;
        c.org_table.clear();
        c.db.clear();
        c.primary_key = false;
      }
      scope->tables.push_back({ref.alias, "", width, plan->columns.size()});
      width += plan->columns.size();
      return plan;
    }
    if (IsInformationSchema(ref.name.db.empty() ? ctx_.current_db : ref.name.db)) {
      // A virtual table: its rows, generated now, as a Values input.
      SHALE_ASSIGN_OR_RETURN(VirtualTable vt,
                             InformationSchemaTable(ref.name.table, *ctx_.catalog, ctx_.info_schema));
      std::string alias = ref.alias.empty() ? ref.name.table : ref.alias;
      for (const ScopeTable& t : scope->tables) {
        if (t.alias == alias) return SqlError(ErrorCode::kNonUniqTable, "Not unique table/alias: '{}'", alias);
      }
      for (ColumnInfo& c : vt.columns) c.table = alias;
      LogicalPtr values = ValuesPlan(std::move(vt.columns), vt.rows);
      scope->tables.push_back({alias, std::string(kInformationSchema), width, values->columns.size()});
      width += values->columns.size();
      return values;
    }
    SHALE_ASSIGN_OR_RETURN(auto table, ResolveTable(ref.name));
    std::string alias = ref.alias.empty() ? table->name : ref.alias;
    for (const ScopeTable& t : scope->tables) {
      if (t.alias == alias) return SqlError(ErrorCode::kNonUniqTable, "Not unique table/alias: '{}'", alias);
    }
    LogicalPtr scan = LogicalOperator::Scan(table, ref.alias);
    scope->tables.push_back({alias, table->db, width, scan->columns.size(), table});
    width += scan->columns.size();
    return scan;
  };
  SHALE_ASSIGN_OR_RETURN(LogicalPtr plan, add(first));
  // Conjuncts of inner joins' ON clauses that hold subqueries: for an inner
  // join ON is a filter, so they filter the whole FROM result (above the
  // Applies of their subqueries, numbered from a placeholder base until the
  // width is known).
  constexpr int kOnApplyBase = 1 << 23;
  std::vector<PendingApply> on_applies;
  std::vector<ExprPtr> on_with_subquery;
  for (const ast::JoinClause& j : joins) {
    const size_t left_tables = scope->tables.size();
    SHALE_ASSIGN_OR_RETURN(LogicalPtr right, add(j.table));
    if (j.kind == ast::JoinClause::Kind::kRight || j.natural || !j.using_columns.empty()) {
      // src/sql/bind_join.cc
      SHALE_ASSIGN_OR_RETURN(plan, BindExtendedJoin(j, std::move(plan), std::move(right), left_tables, scope));
      width = plan->columns.size();
      extended_from_ = true;
      continue;
    }
    auto kind = j.kind == ast::JoinClause::Kind::kLeft ? sierra::JoinKind::kLeft : sierra::JoinKind::kInner;
    plan = LogicalOperator::Join(kind, std::move(plan), std::move(right), nullptr);
    if (j.on) {
      // ON sees the tables joined so far.
      Scope on_scope = *scope;
      on_scope.source = plan.get();
      on_scope.clause = "on clause";
      StartApplies(kOnApplyBase + (kind == sierra::JoinKind::kInner ? on_applies.size() : 0));
      auto bound = BindExpr(*j.on, on_scope);
      collecting_applies_ = false;
      if (!bound.ok()) return bound.status();
      if (applies_.empty()) {
        plan->predicate = *bound;
        continue;
      }
      if (kind == sierra::JoinKind::kLeft) {
        SHALE_RETURN_IF_ERROR(LeftJoinOnSubqueries(plan.get(), *bound, kOnApplyBase));
        continue;
      }
      std::vector<ExprPtr> conjuncts, plain;
      sierra::SplitConjuncts(*bound, &conjuncts);
      for (const ExprPtr& c : conjuncts) {
        int min = INT32_MAX, max = -1;
        ColumnRange(*c, &min, &max);
        (max >= kOnApplyBase ? on_with_subquery : plain).push_back(c);
      }
      if (!plain.empty()) plan->predicate = AndAll(plain);
      for (PendingApply& a : applies_) on_applies.push_back(std::move(a));
      applies_.clear();
    }
  }
  if (!on_applies.empty()) {
    const int width = static_cast<int>(plan->columns.size());
    std::vector<ExprPtr> rebased;
    for (const ExprPtr& c : on_with_subquery) rebased.push_back(RebaseColumns(c, kOnApplyBase, width));
    applies_ = std::move(on_applies);
    plan = LogicalOperator::Filter(FinishApplies(std::move(plan)), AndAll(rebased));
    // Back to the tables' columns.
    std::vector<ExprPtr> cols;
    std::vector<ColumnInfo> infos(plan->columns.begin(), plan->columns.begin() + width);
    for (int i = 0; i < width; ++i) {
      cols.push_back(Expr::ColumnRef(i, infos[i].name, infos[i].type, infos[i].nullable));
    }
    plan = LogicalOperator::Project(std::move(plan), std::move(cols), std::move(infos));
  }
  return plan;
}

Status Binder::LeftJoinOnSubqueries(LogicalOperator* join, const ExprPtr& on, int apply_base) {
  const int left_width = static_cast<int>(join->children[0]->columns.size());
  const int right_width = static_cast<int>(join->children[1]->columns.size());
  auto unsupported = [] {
    return SqlError(ErrorCode::kNotSupportedYet,
                    "This version of Shale doesn't yet support 'a subquery in LEFT JOIN ... ON that reads the left "
                    "table'");
  };
  // Right columns c -> c - left_width, subquery columns after the right's.
  auto to_right = [&](const ExprPtr& e) {
    return RebaseColumns(RebaseColumns(e, apply_base, left_width + right_width), left_width, 0);
  };
  std::vector<ExprPtr> conjuncts, plain, filter;
  sierra::SplitConjuncts(on, &conjuncts);
  for (const ExprPtr& c : conjuncts) {
    int min = INT32_MAX, max = -1;
    ColumnRange(*c, &min, &max);
    if (max < apply_base) {
      plain.push_back(c);
      continue;
    }
    if (min < left_width) return unsupported();
    filter.push_back(to_right(c));
  }
  for (PendingApply& a : applies_) {
    if (a.lhs) {
      int min = INT32_MAX, max = -1;
      ColumnRange(*a.lhs, &min, &max);
      if (max >= 0 && min < left_width) return unsupported();
      a.lhs = to_right(a.lhs);
    }
    for (int c : sierra::OuterColumns(*a.plan)) {
      if (c < left_width) return unsupported();
    }
    a.plan = sierra::RemapOuter(*a.plan, [&](int c) { return c - left_width; });
  }
  LogicalPtr right = FinishApplies(std::move(join->children[1]));
  right = LogicalOperator::Filter(std::move(right), AndAll(filter));
  std::vector<ExprPtr> cols;
  std::vector<ColumnInfo> infos(right->columns.begin(), right->columns.begin() + right_width);
  for (int i = 0; i < right_width; ++i) {
    cols.push_back(Expr::ColumnRef(i, infos[i].name, infos[i].type, infos[i].nullable));
  }
  join->children[1] = LogicalOperator::Project(std::move(right), std::move(cols), std::move(infos));
  join->predicate = plain.empty() ? nullptr : AndAll(plain);
  return Status::OK();
}

Result<LogicalPtr> Binder::BindExtendedJoin(const ast::JoinClause& j, LogicalPtr left, LogicalPtr right,
                                            size_t left_tables, Scope* scope) {
  const bool right_join = j.kind == ast::JoinClause::Kind::kRight;
  const size_t left_width = left->columns.size();
  const size_t right_width = right->columns.size();
  // The join in written order, for binding ON and USING.
  LogicalPtr joined = LogicalOperator::Join(sierra::JoinKind::kInner, std::move(left), std::move(right), nullptr);
  // A column named `name` visible unqualified among tables [begin, end):
  // its position, and the table holding it. 1054 if none, 1052 if several.
  auto find = [&](const std::string& name, size_t begin, size_t end, size_t* table) -> Result<int> {
    int found = -1;
    for (size_t t = begin; t < end; ++t) {
      const ScopeTable& st = scope->tables[t];
      if (st.UsingHidden(name)) continue;
      for (size_t i = st.first; i < st.first + st.count; ++i) {
        const ColumnInfo& c = joined->columns[i];
        if (c.hidden || !EqualsIgnoreCase(c.name, name)) continue;
        if (found >= 0) return SqlError(ErrorCode::kNonUniq, "Column '{}' in from clause is ambiguous", name);
        found = static_cast<int>(i);
        *table = t;
        break;
      }
    }
    if (found < 0) return SqlError(ErrorCode::kBadField, "Unknown column '{}' in 'from clause'", name);
    return found;
  };
  const size_t all_tables = scope->tables.size();
  std::vector<std::string> names = j.using_columns;
  if (j.natural) {
    // NATURAL: every column name the two sides share, in the left side's
    // order (as `*` lists it).
    std::vector<size_t> order;
    for (size_t t = 0; t < left_tables; ++t) order.push_back(t);
    for (size_t t : order) {
      const ScopeTable& st = scope->tables[t];
      for (size_t i = st.first; i < st.first + st.count; ++i) {
        const ColumnInfo& c = joined->columns[i];
        if (c.hidden || st.UsingHidden(c.name)) continue;
        size_t ignored = 0;
        if (!find(c.name, left_tables, all_tables, &ignored).ok()) continue;
        bool seen = false;
        for (const std::string& n : names) seen |= EqualsIgnoreCase(n, c.name);
        if (!seen) names.push_back(c.name);
      }
    }
  }
  std::vector<ExprPtr> conjuncts;
  struct Coalesced {
    int left, right;
    size_t left_table, right_table;
  };
  std::vector<Coalesced> coalesced;
  for (size_t n = 0; n < names.size(); ++n) {
    for (size_t m = 0; m < n; ++m) {
      if (EqualsIgnoreCase(names[m], names[n])) {
        return SqlError(ErrorCode::kNonUniq, "Column '{}' in from clause is ambiguous", names[n]);
      }
    }
    Coalesced c{};
    SHALE_ASSIGN_OR_RETURN(c.left, find(names[n], 0, left_tables, &c.left_table));
    SHALE_ASSIGN_OR_RETURN(c.right, find(names[n], left_tables, all_tables, &c.right_table));
    const ColumnInfo& l = joined->columns[c.left];
    const ColumnInfo& r = joined->columns[c.right];
    conjuncts.push_back(Expr::Compare(sierra::CompareOp::kEq, Expr::ColumnRef(c.left, l.name, l.type, l.nullable),
                                      Expr::ColumnRef(c.right, r.name, r.type, r.nullable)));
    coalesced.push_back(c);
  }
  if (j.on) {
    Scope on_scope = *scope;
    on_scope.source = joined.get();
    on_scope.clause = "on clause";
    SHALE_ASSIGN_OR_RETURN(ExprPtr on, BindExpr(*j.on, on_scope));
    conjuncts.push_back(std::move(on));
  }
  ExprPtr predicate = conjuncts.empty() ? nullptr : AndAll(conjuncts);
  LogicalPtr plan;
  if (!right_join) {
    joined->join_kind = j.kind == ast::JoinClause::Kind::kLeft ? sierra::JoinKind::kLeft : sierra::JoinKind::kInner;
    if (joined->join_kind == sierra::JoinKind::kLeft) {
      for (size_t i = left_width; i < joined->columns.size(); ++i) joined->columns[i].nullable = true;
    }
    joined->predicate = predicate;
    plan = std::move(joined);
  } else {
    // a RIGHT JOIN b ON p is b LEFT JOIN a ON p, with the columns put back
    // into written order.
    std::vector<int> swap(left_width + right_width);
    for (size_t i = 0; i < left_width; ++i) swap[i] = static_cast<int>(right_width + i);
    for (size_t i = 0; i < right_width; ++i) swap[left_width + i] = static_cast<int>(i);
    LogicalPtr a = std::move(joined->children[0]);
    LogicalPtr b = std::move(joined->children[1]);
    LogicalPtr swapped = LogicalOperator::Join(sierra::JoinKind::kLeft, std::move(b), std::move(a),
                                               predicate ? RemapColumns(predicate, swap) : nullptr);
    std::vector<ExprPtr> exprs;
    std::vector<ColumnInfo> infos;
    for (size_t i = 0; i < left_width + right_width; ++i) {
      const ColumnInfo& c = swapped->columns[swap[i]];
      exprs.push_back(Expr::ColumnRef(swap[i], c.name, c.type, c.nullable));
      infos.push_back(c);
    }
    plan = LogicalOperator::Project(std::move(swapped), std::move(exprs), std::move(infos));
  }
  if (coalesced.empty()) return plan;
  // The coalesced columns: the left side's value (the right side's for a
  // RIGHT join), after the tables' columns, in an unnamed scope table that
  // `*` lists first; unqualified names see them instead of the joined ones.
  const size_t width = plan->columns.size();
  std::vector<ExprPtr> exprs;
  std::vector<ColumnInfo> infos = plan->columns;
  for (size_t i = 0; i < width; ++i) {
    exprs.push_back(Expr::ColumnRef(static_cast<int>(i), infos[i].name, infos[i].type, infos[i].nullable));
  }
  for (const Coalesced& c : coalesced) {
    const int from = right_join ? c.right : c.left;
    ColumnInfo info = plan->columns[from];
    exprs.push_back(Expr::ColumnRef(from, info.name, info.type, info.nullable));
    infos.push_back(std::move(info));
    scope->tables[c.left_table].using_hidden.push_back(plan->columns[c.left].name);
    scope->tables[c.right_table].using_hidden.push_back(plan->columns[c.right].name);
  }
  if (right_join) {
    // MySQL lists the right side's other columns before the left side's
    // when a RIGHT join coalesces columns.
    std::rotate(scope->tables.begin(), scope->tables.begin() + static_cast<std::ptrdiff_t>(left_tables),
                scope->tables.end());
  }
  ScopeTable merged;
  merged.first = width;
  merged.count = coalesced.size();
  scope->tables.insert(scope->tables.begin(), std::move(merged));
  return LogicalOperator::Project(std::move(plan), std::move(exprs), std::move(infos));
}

ColumnInfo Binder::ItemColumn(const ast::Expr& e, const ExprPtr& bound, const Scope& input) {
  if (e.kind == ast::ExprKind::kColumn) {
    AggregateBinding* saved = agg_;
    agg_ = nullptr;
    auto in = BindColumn(e, input);
    agg_ = saved;
    if (in.ok()) {
      ColumnInfo info = input.source->columns[(*in)->column];
      info.name = e.names.back();
      info.nullable = bound->nullable;
      return info;
    }
  }
  return ExprColumn(e.text, bound);
}

Result<LogicalPtr> Binder::BindSelect(const ast::SelectStmt& s) {
  if (!s.union_terms.empty()) return BindUnion(s);
  LogicalPtr plan;
  Scope scope;
  scope.outer = outer_;
  if (s.from) {
    SHALE_ASSIGN_OR_RETURN(plan, BindFrom(s, &scope));
  } else {
    plan = LogicalOperator::Values({}, {{}});  // one empty row
  }
  scope.source = plan.get();

  if (s.where) {
    Scope where_scope = scope;
    where_scope.clause = "where clause";
    const size_t width = plan->columns.size();
    StartApplies(width);
    auto bound = BindExpr(*s.where, where_scope);
    collecting_applies_ = false;
    if (!bound.ok()) return bound.status();
    ExprPtr pred = *bound;
    // Conjuncts with subqueries read the Apply columns: they filter above
    // the Applies; the others go down to the tables as before.
    std::vector<ExprPtr> conjuncts, plain, with_subquery;
    sierra::SplitConjuncts(pred, &conjuncts);
    for (const ExprPtr& c : conjuncts) {
      int min = INT32_MAX, max = -1;
      ColumnRange(*c, &min, &max);
      (max >= static_cast<int>(width) ? with_subquery : plain).push_back(c);
    }
    if (s.joins.empty() || extended_from_) {
      // One table, or joins other than the left-deep inner/left chain the
      // push-down understands: WHERE filters the FROM result.
      if (!plain.empty()) plan = LogicalOperator::Filter(std::move(plan), AndAll(plain));
    } else {
      plan = JoinInConnectedOrder(std::move(plan), std::move(plain), scope.tables);
    }
    plan = FinishApplies(std::move(plan));
    if (!with_subquery.empty()) plan = LogicalOperator::Filter(std::move(plan), AndAll(with_subquery));
    scope.source = plan.get();
  }

  if (s.rollup && !s.order_by.empty()) {
    return SqlError(ErrorCode::kWrongUsage, "Incorrect usage of CUBE/ROLLUP and ORDER BY");
  }
  // GROUP BY or aggregates: everything after this binds above the aggregate.
  bool aggregate = !s.group_by.empty() || (s.having && ContainsAggregate(*s.having));
  for (const ast::SelectItem& item : s.items) aggregate |= ContainsAggregate(*item.expr);
  for (const ast::OrderItem& item : s.order_by) aggregate |= ContainsAggregate(*item.expr);
  AggregateBinding agg;
  if (aggregate) {
    agg.input = scope;
    Scope group_scope = scope;
    group_scope.clause = "group statement";
    for (const ast::ExprPtr& g : s.group_by) {
      const ast::Expr* ge = g.get();
      if (ge->kind == ast::ExprKind::kLiteral && ge->value.is_int()) {
        int64_t pos = ge->value.as_int();
        if (pos < 1 || static_cast<size_t>(pos) > s.items.size() ||
            s.items[pos - 1].expr->kind == ast::ExprKind::kStar) {
          return SqlError(ErrorCode::kBadField, "Unknown column '{}' in 'group statement'", pos);
        }
        ge = s.items[pos - 1].expr.get();
      }
      auto bound = ContainsAggregate(*ge) ? Result<ExprPtr>(ExprPtr()) : BindExpr(*ge, group_scope);
      if (!ContainsAggregate(*ge) && !bound.ok() && bound.status().mysql_code() == 1054 &&
          ge->kind == ast::ExprKind::kColumn && ge->names.size() == 1) {
        // Not a column of the FROM tables: a select-list alias.
        for (const ast::SelectItem& item : s.items) {
          if (!item.alias.empty() && EqualsIgnoreCase(item.alias, ge->names[0])) {
            ge = item.expr.get();
            bound = ContainsAggregate(*ge) ? Result<ExprPtr>(ExprPtr()) : BindExpr(*ge, group_scope);
            break;
          }
        }
      }
      if (ContainsAggregate(*ge)) {
        return SqlError(ErrorCode::kWrongGroupField, "Can't group on '{}'", ge->text);
      }
      if (!bound.ok()) return bound.status();
      agg.group_by.push_back(*bound);
      agg.group_names.push_back(ge->text);
    }
    agg_ = &agg;
  }
  struct ResetAgg {
    AggregateBinding** p;
    ~ResetAgg() { *p = nullptr; }
  } reset_agg{&agg_};
  const Scope& input = aggregate ? agg.input : scope;
  // Subqueries of the select list, HAVING and ORDER BY. Above an aggregate
  // their Applies go over the aggregate's rows; their columns follow the
  // aggregate's, whose number is known only once everything is bound (HAVING
  // and ORDER BY may add aggregate calls), so they are numbered from a
  // placeholder base and rebased below.
  constexpr int kAboveAggregateApplyBase = 1 << 24;
  if (aggregate) {
    StartApplies(kAboveAggregateApplyBase);
    above_aggregate_ = true;
  } else {
    StartApplies(plan->columns.size());
  }

  // Select list, with * expanded.
  std::vector<ExprPtr> exprs;
  std::vector<ColumnInfo> columns;
  for (const ast::SelectItem& item : s.items) {
    if (item.expr->kind == ast::ExprKind::kStar) {
      if (!s.from) return SqlError(ErrorCode::kNoTablesUsed, "No tables used");
      bool any = false;
      for (const ScopeTable& t : input.tables) {
        if (!item.expr->names.empty() && item.expr->names.back() != t.alias) continue;
        any = true;
        for (size_t i = t.first; i < t.first + t.count; ++i) {
          const ColumnInfo& c = input.source->columns[i];
          if (c.hidden) continue;
          if (item.expr->names.empty() && t.UsingHidden(c.name)) continue;
          ast::Expr col;
          col.kind = ast::ExprKind::kColumn;
          col.names = {t.alias, c.name};
          if (t.alias.empty()) col.names = {c.name};  // a column coalesced by USING
          col.text = c.name;
          auto bound = BindExpr(col, scope);
          if (!bound.ok() && t.alias.empty() && !aggregate) {
            // The name is also another table's column: take the coalesced one.
            bound = Expr::ColumnRef(static_cast<int>(i), c.name, c.type, c.nullable);
          }
          SHALE_ASSIGN_OR_RETURN(ExprPtr e, std::move(bound));
          ColumnInfo info = c;
          info.nullable = e->nullable;
          exprs.push_back(std::move(e));
          columns.push_back(std::move(info));
        }
      }
      if (!any) return SqlError(ErrorCode::kUnknownTable, "Unknown table '{}'", item.expr->names.back());
      continue;
    }
    SHALE_ASSIGN_OR_RETURN(ExprPtr e, BindExpr(*item.expr, scope));
    ColumnInfo info = ItemColumn(*item.expr, e, input);
    if (!item.alias.empty()) {
      info.name = item.alias;
      agg.aliases.emplace_back(item.alias, e);
    }
    exprs.push_back(e);
    columns.push_back(std::move(info));
  }

  ExprPtr having;
  if (s.having) {
    Scope having_scope = scope;
    having_scope.clause = "having clause";
    SHALE_ASSIGN_OR_RETURN(having, BindExpr(*s.having, having_scope));
  }

  // ORDER BY: a position, a select-list alias, or an expression over the source.
  std::vector<sierra::SortKey> keys;
  if (!s.order_by.empty()) {
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
  }

  std::vector<PendingApply> above_applies;
  if (aggregate) {
    above_aggregate_ = false;
    collecting_applies_ = false;
    above_applies = std::move(applies_);
    applies_.clear();
  }
  if (aggregate) {
    std::vector<ColumnInfo> agg_columns;
    for (size_t i = 0; i < agg.group_by.size(); ++i) {
      const ExprPtr& g = agg.group_by[i];
      if (g->kind == sierra::ExprKind::kColumnRef) {
        agg_columns.push_back(agg.input.source->columns[g->column]);
      } else {
        agg_columns.push_back(ExprColumn(agg.group_names[i], g));
      }
    }
    for (size_t i = 0; i < agg.calls.size(); ++i) {
      ColumnInfo c;
      c.name = agg.call_names[i];
      c.type = agg.calls[i].type;
      c.nullable = agg.calls[i].nullable;
      agg_columns.push_back(std::move(c));
    }
    if (s.rollup) {
      plan = RollupPlan(std::move(plan), agg.group_by, agg.calls, std::move(agg_columns));
    } else {
      plan = LogicalOperator::Aggregate(std::move(plan), agg.group_by, agg.calls, std::move(agg_columns));
    }
  }
  if (!above_applies.empty()) {
    const int width = static_cast<int>(plan->columns.size());
    if (having) having = RebaseColumns(having, kAboveAggregateApplyBase, width);
    for (ExprPtr& e : exprs) e = RebaseColumns(e, kAboveAggregateApplyBase, width);
    for (sierra::SortKey& k : keys) k.expr = RebaseColumns(k.expr, kAboveAggregateApplyBase, width);
    applies_ = std::move(above_applies);
    plan = FinishApplies(std::move(plan));  // the columns above keep their positions
  }
  if (!aggregate) plan = FinishApplies(std::move(plan));  // HAVING may read them
  if (having) plan = LogicalOperator::Filter(std::move(plan), std::move(having));
  if (!keys.empty()) plan = LogicalOperator::Sort(std::move(plan), std::move(keys));
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
  if (!scope.source) return unknown();
  const std::string& col = e.names.back();
  const auto& cols = scope.source->columns;
  int found = -1;
  for (const ScopeTable& t : scope.tables) {
    if (e.names.size() >= 2 && e.names[e.names.size() - 2] != t.alias) continue;
    if (e.names.size() == 3 && e.names[0] != t.db) continue;
    if (e.names.size() == 1 && t.UsingHidden(col)) continue;
    for (size_t i = t.first; i < t.first + t.count && i < cols.size(); ++i) {
      if (!cols[i].hidden && EqualsIgnoreCase(cols[i].name, col)) {
        if (found >= 0) {
          return SqlError(ErrorCode::kNonUniq, "Column '{}' in {} is ambiguous", full, scope.clause);
        }
        found = static_cast<int>(i);
        break;
      }
    }
  }
  if (found < 0) {
    if (scope.outer && scope.outer->source) {
      // A correlated subquery: the name is a column of the enclosing query.
      Scope outer = *scope.outer;
      outer.outer = nullptr;  // one level of correlation
      outer.clause = scope.clause;
      AggregateBinding* saved = agg_;
      agg_ = nullptr;
      auto ref = BindColumn(e, outer);
      agg_ = saved;
      if (ref.ok()) {
        return sierra::OuterRef((*ref)->column, (*ref)->name, (*ref)->type, (*ref)->nullable);
      }
      if (ref.status().mysql_code() != static_cast<uint16_t>(ErrorCode::kBadField)) return ref.status();
    }
    return unknown();
  }
  return Expr::ColumnRef(found, cols[found].name, cols[found].type, cols[found].nullable);
}

Result<ExprPtr> Binder::BindAggregateCall(const ast::Expr& e) {
  if (!agg_ || agg_->inside_call) {
    return SqlError(ErrorCode::kInvalidGroupFuncUse, "Invalid use of group function");
  }
  sierra::AggregateCall call;
  call.distinct = e.distinct;
  const std::string& n = e.name;
  // Several arguments: GROUP_CONCAT, and COUNT(DISTINCT ...) (MySQL's rule).
  const bool several_ok = n == "GROUP_CONCAT" || (n == "COUNT" && e.distinct);
  if (e.children.empty() || (e.children.size() > 1 && !several_ok)) return SyntaxError(e.text, 1);
  using sierra::AggregateKind;
  static const std::map<std::string, AggregateKind> kKinds = {
      {"COUNT", AggregateKind::kCount},        {"SUM", AggregateKind::kSum},
      {"AVG", AggregateKind::kAvg},            {"MIN", AggregateKind::kMin},
      {"MAX", AggregateKind::kMax},            {"STD", AggregateKind::kStddevPop},
      {"STDDEV", AggregateKind::kStddevPop},   {"STDDEV_POP", AggregateKind::kStddevPop},
      {"STDDEV_SAMP", AggregateKind::kStddevSamp}, {"VARIANCE", AggregateKind::kVarPop},
      {"VAR_POP", AggregateKind::kVarPop},     {"VAR_SAMP", AggregateKind::kVarSamp},
      {"BIT_AND", AggregateKind::kBitAnd},     {"BIT_OR", AggregateKind::kBitOr},
      {"BIT_XOR", AggregateKind::kBitXor},     {"GROUP_CONCAT", AggregateKind::kGroupConcat},
  };
  if (n == "COUNT" && e.children[0]->kind == ast::ExprKind::kStar) {
    call.kind = sierra::AggregateKind::kCountStar;
  } else {
    call.kind = kKinds.at(n);
    if (call.kind == AggregateKind::kGroupConcat && e.value.is_string()) call.separator = e.value.as_string();
    agg_->inside_call = true;
    in_aggregate_arg_ = true;
    struct Restore {
      Binder* b;
      ~Restore() {
        b->in_aggregate_arg_ = false;
        b->agg_->inside_call = false;
      }
    } restore{this};
    SHALE_ASSIGN_OR_RETURN(call.arg, BindExpr(*e.children[0], agg_->input));
    for (size_t i = 1; i < e.children.size(); ++i) {
      SHALE_ASSIGN_OR_RETURN(ExprPtr more, BindExpr(*e.children[i], agg_->input));
      call.more_args.push_back(std::move(more));
    }
    for (size_t i = 0; i < e.order_by.size(); ++i) {
      const ast::Expr& oe = *e.order_by[i];
      sierra::AggregateOrder o;
      o.desc = e.order_desc[i];
      if (oe.kind == ast::ExprKind::kLiteral && oe.value.is_int()) {
        // A position names one of GROUP_CONCAT's own arguments (MySQL).
        int64_t pos = oe.value.as_int();
        if (pos < 1 || static_cast<size_t>(pos) > e.children.size()) {
          return SqlError(ErrorCode::kBadField, "Unknown column '{}' in 'order clause'", pos);
        }
        o.expr = pos == 1 ? call.arg : call.more_args[pos - 2];
      } else {
        SHALE_ASSIGN_OR_RETURN(o.expr, BindExpr(oe, agg_->input));
      }
      call.order_by.push_back(std::move(o));
    }
  }
  switch (call.kind) {
    case sierra::AggregateKind::kCountStar:
    case sierra::AggregateKind::kCount:
      call.type = SqlType::BigInt();
      call.nullable = false;
      break;
    case sierra::AggregateKind::kSum:
    case sierra::AggregateKind::kAvg: {
      // Exact arguments give DECIMAL (SUM: 22 more digits; AVG: 4 more
      // digits and scale), others DOUBLE, as in MySQL.
      SqlType t = call.arg->type;
      if (t.is_temporal() || t.id == TypeId::kYear) {
        // A date or time sums as its number (20240131, 103000.5): exact.
        t = t.scale ? SqlType::Decimal(14u + t.scale, t.scale) : SqlType::BigInt();
      }
      if (t.is_integer() || t.is_decimal() || t.id == TypeId::kNull) {
        uint32_t p = t.id == TypeId::kNull ? 1 : t.DecimalPrecision();
        uint32_t s = t.is_decimal() ? t.scale : 0;
        if (call.kind == sierra::AggregateKind::kSum) {
          call.type = SqlType::Decimal(std::min<uint32_t>(p + 22, 65), static_cast<uint8_t>(s));
        } else {
          uint32_t scale = std::min<uint32_t>(s + Decimal::kDivPrecisionIncrement, Decimal::kMaxScale);
          call.type = SqlType::Decimal(std::min<uint32_t>(p + 4, 65), static_cast<uint8_t>(scale));
        }
      } else {
        call.type = SqlType::Double();
      }
      break;
    }
    case sierra::AggregateKind::kStddevPop:
    case sierra::AggregateKind::kStddevSamp:
    case sierra::AggregateKind::kVarPop:
    case sierra::AggregateKind::kVarSamp:
      call.type = SqlType::Double();
      break;
    case sierra::AggregateKind::kBitAnd:
    case sierra::AggregateKind::kBitOr:
    case sierra::AggregateKind::kBitXor:
      call.type = SqlType::Integer(TypeId::kBigInt, true);
      call.nullable = false;
      break;
    case sierra::AggregateKind::kGroupConcat:
      call.type = SqlType::Varchar(1024);
      break;
    default:
      call.type = call.arg->type;
      break;
  }
  return Expr::ColumnRef(agg_->CallColumn(call, e.text), e.text, call.type, call.nullable);
}

Result<ExprPtr> Binder::BindGrouped(const ast::Expr& e, const char* clause) {
  AggregateBinding* agg = agg_;
  agg_->inside_call = true;  // bind over the input, not above the aggregate
  Scope input = agg->input;
  input.clause = clause;
  auto bound = BindExpr(e, input);
  agg->inside_call = false;
  if (!bound.ok()) {
    if (bound.status().mysql_code() != 1054) return bound.status();
    if (e.kind != ast::ExprKind::kColumn) return ExprPtr();  // find the culprit part by part
    // HAVING and ORDER BY may name a select-list alias.
    if (e.names.size() == 1) {
      for (const auto& [alias, expr] : agg->aliases) {
        if (EqualsIgnoreCase(alias, e.names[0])) return expr;
      }
    }
    return bound.status();
  }
  const ExprPtr& b = *bound;
  std::string key = b->ToString();
  for (size_t i = 0; i < agg->group_by.size(); ++i) {
    if (agg->group_by[i]->ToString() == key) {
      return Expr::ColumnRef(static_cast<int>(i), b->kind == sierra::ExprKind::kColumnRef ? b->name : e.text,
                             b->type, b->nullable);
    }
  }
  if (b->kind == sierra::ExprKind::kConstant) return b;
  if (e.kind == ast::ExprKind::kColumn) {
    // Neither grouped nor aggregated: the value from the group's first row
    // (MariaDB's default; MySQL's ONLY_FULL_GROUP_BY would refuse it).
    return Expr::ColumnRef(agg->AnyValueColumn(b, e.text), b->name, b->type, b->nullable);
  }
  return ExprPtr();  // a composite: bind its parts one by one
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
  if (IsAggregateFunction(n)) return BindAggregateCall(e);
  if (n == "ROW") return SqlError(ErrorCode::kOperandColumns, "Operand should contain 1 column(s)");
  // Control-flow and scalar functions.
  auto arg_count = [&](size_t min, size_t max) -> Status {
    if (e.children.size() < min || e.children.size() > max) {
      return SqlError(ErrorCode::kWrongParamcountToNativeFct,
                      "Incorrect parameter count in the call to native function '{}'", e.name);
    }
    return Status::OK();
  };
  auto bind_args = [&]() -> Result<std::vector<ExprPtr>> {
    std::vector<ExprPtr> args;
    for (const auto& c : e.children) {
      SHALE_ASSIGN_OR_RETURN(ExprPtr a, BindExpr(*c, scope));
      args.push_back(std::move(a));
    }
    return args;
  };
  {
    BindArgument bind = [&](const ast::Expr& a) { return BindExpr(a, scope); };
    SHALE_ASSIGN_OR_RETURN(auto temporal, BindTemporalFunction(e, bind));
    if (temporal) return *temporal;
  }
  using sierra::ScalarFunction;
  static const std::map<std::string, std::pair<ScalarFunction, std::pair<size_t, size_t>>> kScalar = {
      {"COALESCE", {ScalarFunction::kCoalesce, {1, SIZE_MAX}}},
      {"IFNULL", {ScalarFunction::kCoalesce, {2, 2}}},
      {"ABS", {ScalarFunction::kAbs, {1, 1}}},
      {"LENGTH", {ScalarFunction::kLength, {1, 1}}},
      {"OCTET_LENGTH", {ScalarFunction::kLength, {1, 1}}},
      {"CONCAT", {ScalarFunction::kConcat, {1, SIZE_MAX}}},
      {"LOWER", {ScalarFunction::kLower, {1, 1}}},
      {"LCASE", {ScalarFunction::kLower, {1, 1}}},
      {"UPPER", {ScalarFunction::kUpper, {1, 1}}},
      {"UCASE", {ScalarFunction::kUpper, {1, 1}}},
      {"ROUND", {ScalarFunction::kRound, {1, 2}}},
      {"TRUNCATE", {ScalarFunction::kTruncate, {2, 2}}},
      {"FLOOR", {ScalarFunction::kFloor, {1, 1}}},
      {"CEIL", {ScalarFunction::kCeil, {1, 1}}},
      {"CEILING", {ScalarFunction::kCeil, {1, 1}}},
      {"POWER", {ScalarFunction::kPower, {2, 2}}},
      {"POW", {ScalarFunction::kPower, {2, 2}}},
      {"SQRT", {ScalarFunction::kSqrt, {1, 1}}},
      {"SIGN", {ScalarFunction::kSign, {1, 1}}},
      {"LN", {ScalarFunction::kLn, {1, 1}}},
      {"LOG2", {ScalarFunction::kLog2, {1, 1}}},
      {"LOG10", {ScalarFunction::kLog10, {1, 1}}},
      {"EXP", {ScalarFunction::kExp, {1, 1}}},
      {"PI", {ScalarFunction::kPi, {0, 0}}},
      {"GREATEST", {ScalarFunction::kGreatest, {2, SIZE_MAX}}},
      {"LEAST", {ScalarFunction::kLeast, {2, SIZE_MAX}}},
      {"SUBSTRING", {ScalarFunction::kSubstring, {2, 3}}},
      {"SUBSTR", {ScalarFunction::kSubstring, {2, 3}}},
      {"MID", {ScalarFunction::kSubstring, {3, 3}}},
      {"LEFT", {ScalarFunction::kLeft, {2, 2}}},
      {"RIGHT", {ScalarFunction::kRight, {2, 2}}},
      {"TRIM", {ScalarFunction::kTrim, {1, 2}}},
      {"TRIM_LEADING", {ScalarFunction::kLtrim, {1, 2}}},
      {"TRIM_TRAILING", {ScalarFunction::kRtrim, {1, 2}}},
      {"LTRIM", {ScalarFunction::kLtrim, {1, 1}}},
      {"RTRIM", {ScalarFunction::kRtrim, {1, 1}}},
      {"REPLACE", {ScalarFunction::kReplace, {3, 3}}},
      {"REVERSE", {ScalarFunction::kReverse, {1, 1}}},
      {"REPEAT", {ScalarFunction::kRepeat, {2, 2}}},
      {"LPAD", {ScalarFunction::kLpad, {2, 3}}},  // MariaDB pads with spaces when pad is omitted
      {"RPAD", {ScalarFunction::kRpad, {2, 3}}},
      {"LOCATE", {ScalarFunction::kLocate, {2, 3}}},
      {"CONCAT_WS", {ScalarFunction::kConcatWs, {2, SIZE_MAX}}},
      {"CHAR_LENGTH", {ScalarFunction::kCharLength, {1, 1}}},
      {"CHARACTER_LENGTH", {ScalarFunction::kCharLength, {1, 1}}},
      {"ASCII", {ScalarFunction::kAscii, {1, 1}}},
      {"HEX", {ScalarFunction::kHex, {1, 1}}},
      {"UNHEX", {ScalarFunction::kUnhex, {1, 1}}},
      {"SPACE", {ScalarFunction::kSpace, {1, 1}}},
      {"STRCMP", {ScalarFunction::kStrcmp, {2, 2}}},
      {"FIND_IN_SET", {ScalarFunction::kFindInSet, {2, 2}}},
      // REGEXP_LIKE is MySQL 8's (MariaDB has only the operator); the others
      // take MariaDB's arguments (MySQL 8's position/occurrence forms: 1582).
      {"REGEXP_LIKE", {ScalarFunction::kRegexpLike, {2, 3}}},
      {"REGEXP_INSTR", {ScalarFunction::kRegexpInstr, {2, 2}}},
      {"REGEXP_SUBSTR", {ScalarFunction::kRegexpSubstr, {2, 2}}},
      {"REGEXP_REPLACE", {ScalarFunction::kRegexpReplace, {3, 3}}},
      {"BIT_COUNT", {ScalarFunction::kBitCount, {1, 1}}},
      {"UUID", {ScalarFunction::kUuid, {0, 0}}},
      {"ACOS", {ScalarFunction::kAcos, {1, 1}}},
      {"ASIN", {ScalarFunction::kAsin, {1, 1}}},
      {"ATAN", {ScalarFunction::kAtan, {1, 2}}},
      {"ATAN2", {ScalarFunction::kAtan, {2, 2}}},
      {"COS", {ScalarFunction::kCos, {1, 1}}},
      {"COT", {ScalarFunction::kCot, {1, 1}}},
      {"SIN", {ScalarFunction::kSin, {1, 1}}},
      {"TAN", {ScalarFunction::kTan, {1, 1}}},
      {"DEGREES", {ScalarFunction::kDegrees, {1, 1}}},
      {"RADIANS", {ScalarFunction::kRadians, {1, 1}}},
      {"CONV", {ScalarFunction::kConv, {3, 3}}},
      {"BIT_LENGTH", {ScalarFunction::kBitLength, {1, 1}}},
      {"CHAR", {ScalarFunction::kChar, {1, SIZE_MAX}}},
      {"ELT", {ScalarFunction::kElt, {2, SIZE_MAX}}},
      {"FORMAT", {ScalarFunction::kFormat, {2, 3}}},
      {"TO_BASE64", {ScalarFunction::kToBase64, {1, 1}}},
      {"FROM_BASE64", {ScalarFunction::kFromBase64, {1, 1}}},
      {"INSERT", {ScalarFunction::kInsert, {4, 4}}},
      {"MD5", {ScalarFunction::kMd5, {1, 1}}},
      {"SHA", {ScalarFunction::kSha1, {1, 1}}},
      {"SHA1", {ScalarFunction::kSha1, {1, 1}}},
      {"SHA2", {ScalarFunction::kSha2, {2, 2}}},
      {"CRC32", {ScalarFunction::kCrc32, {1, 1}}},
      {"SUBSTRING_INDEX", {ScalarFunction::kSubstringIndex, {3, 3}}},
      {"SOUNDEX", {ScalarFunction::kSoundex, {1, 1}}},
      {"QUOTE", {ScalarFunction::kQuote, {1, 1}}},
      {"ORD", {ScalarFunction::kOrd, {1, 1}}},
      {"MAKE_SET", {ScalarFunction::kMakeSet, {2, SIZE_MAX}}},
      {"EXPORT_SET", {ScalarFunction::kExportSet, {3, 5}}},
      {"INET_ATON", {ScalarFunction::kInetAton, {1, 1}}},
      {"INET_NTOA", {ScalarFunction::kInetNtoa, {1, 1}}},
      {"UUID_SHORT", {ScalarFunction::kUuidShort, {0, 0}}},
      {"SLEEP", {ScalarFunction::kSleep, {1, 1}}},
      {"PERIOD_ADD", {ScalarFunction::kPeriodAdd, {2, 2}}},
      {"PERIOD_DIFF", {ScalarFunction::kPeriodDiff, {2, 2}}},
  };
  if (n == "BIN" || n == "OCT") {
    // BIN(n) is CONV(n, 10, 2); OCT(n) CONV(n, 10, 8).
    SHALE_RETURN_IF_ERROR(arg_count(1, 1));
    SHALE_ASSIGN_OR_RETURN(auto args, bind_args());
    return Expr::Function(ScalarFunction::kConv, {args[0], Expr::Constant(Value::Int(10)),
                                                  Expr::Constant(Value::Int(n == "BIN" ? 2 : 8))});
  }
  if (n == "ISNULL") {
    SHALE_RETURN_IF_ERROR(arg_count(1, 1));
    SHALE_ASSIGN_OR_RETURN(auto args, bind_args());
    return Expr::IsNull(args[0], /*negated=*/false);
  }
  if (n == "CHARSET" || n == "COLLATION") {
    // The argument type's character set or collation; 'binary' for numbers
    // and binary strings.
    SHALE_RETURN_IF_ERROR(arg_count(1, 1));
    SHALE_ASSIGN_OR_RETURN(auto args, bind_args());
    const SqlType& t = args[0]->type;
    const uint16_t collation = t.is_string() ? t.Collation() : kCollationBinary;
    std::string text = collation == kCollationBinary ? "binary"
                       : n == "CHARSET"              ? std::string(CharsetOfCollation(collation).name)
                                                     : std::string(CollationById(collation).name);
    return Expr::Constant(Value::String(std::move(text)));
  }
  if (n == "INSTR") {
    // INSTR(str, substr) is LOCATE(substr, str).
    SHALE_RETURN_IF_ERROR(arg_count(2, 2));
    SHALE_ASSIGN_OR_RETURN(auto args, bind_args());
    return Expr::Function(ScalarFunction::kLocate, {args[1], args[0]});
  }
  if (n == "LOG") {
    // LOG(x) is LN(x); LOG(b, x) the log of x in base b.
    SHALE_RETURN_IF_ERROR(arg_count(1, 2));
    SHALE_ASSIGN_OR_RETURN(auto args, bind_args());
    const ScalarFunction f = args.size() == 1 ? ScalarFunction::kLn : ScalarFunction::kLog;
    return Expr::Function(f, std::move(args));
  }
  if (n == "MOD") {
    SHALE_RETURN_IF_ERROR(arg_count(2, 2));
    SHALE_ASSIGN_OR_RETURN(auto args, bind_args());
    return Expr::Arith(sierra::ArithOp::kMod, args[0], args[1]);
  }
  if (n == "RAND") {
    SHALE_RETURN_IF_ERROR(arg_count(0, 0));
    return Expr::Function(ScalarFunction::kRand, {});
  }
  if (n == "COLLATE") {
    // expr COLLATE name (the parser's node): the value unchanged, compared
    // under `name` with explicit coercibility (a cast to a string type
    // carrying the collation).
    SHALE_ASSIGN_OR_RETURN(auto args, bind_args());
    const std::string name = e.children[1]->value.ToText();
    const CollationInfo* co = FindCollation(name);
    if (!co) return SqlError(ErrorCode::kUnknownCollation, "Unknown collation: '{}'", name);
    SqlType t = args[0]->type;
    if (!t.is_string() || t.id == TypeId::kEnum || t.id == TypeId::kSet) {
      t = SqlType::Varchar(t.is_string() ? t.MaxBytes() / 4 : 20);
    }
    if (t.Collation() == kCollationBinary && co->id != kCollationBinary) {
      return SqlError(ErrorCode::kCollationCharsetMismatch, "COLLATION '{}' is not valid for CHARACTER SET '{}'",
                      co->name, "binary");
    }
    if (t.Collation() != kCollationBinary &&
        std::string_view(CharsetOfCollation(t.Collation()).name) != co->charset) {
      return SqlError(ErrorCode::kCollationCharsetMismatch, "COLLATION '{}' is not valid for CHARACTER SET '{}'",
                      co->name, CharsetOfCollation(t.Collation()).name);
    }
    if (co->id == kCollationBinary) {
      t = SqlType::Varbinary(t.MaxBytes());
    } else {
      t.collation = co->id;
    }
    return Expr::Cast(args[0], t);
  }
  if (n == "CAST" || n == "CONVERT") {
    SHALE_ASSIGN_OR_RETURN(auto args, bind_args());
    const std::string& type = e.names[0];
    std::optional<uint32_t> length, scale;
    if (!e.names[1].empty()) length = static_cast<uint32_t>(std::stoul(e.names[1]));
    if (!e.names[2].empty()) scale = static_cast<uint32_t>(std::stoul(e.names[2]));
    SqlType t;
    if (type == "SIGNED" || type == "INTEGER" || type == "INT") {
      t = SqlType::BigInt();
    } else if (type == "UNSIGNED") {
      t = SqlType::Integer(TypeId::kBigInt, true);
    } else if (type == "DECIMAL" || type == "DOUBLE" || type == "FLOAT" || type == "REAL") {
      ast::ColumnDefinition cd;
      cd.name = "cast";
      cd.type_name = type;
      cd.length = length;
      cd.scale = scale;
      SHALE_ASSIGN_OR_RETURN(t, BindColumnType(cd));
      if (t.is_floating()) t = SqlType::Double();
    } else if (type == "DATE" || type == "DATETIME" || type == "TIME") {
      ast::ColumnDefinition cd;
      cd.name = "cast";
      cd.type_name = type;
      cd.length = length;
      cd.scale = scale;
      SHALE_ASSIGN_OR_RETURN(auto temporal, BindTemporalColumnType(cd));
      t = *temporal;
    } else if (type == "BINARY") {
      // A binary string: compared bytewise.
      t = SqlType::Varbinary(length.value_or(args[0]->type.is_string() ? args[0]->type.MaxBytes() : 64));
    } else if (type == "CHAR" || type == "NCHAR") {
      // Of a binary string (VARBINARY's length is in bytes) as many
      // characters as it has bytes.
      t = SqlType::Varchar(length.value_or(args[0]->type.is_binary_string() ? args[0]->type.MaxBytes()
                                           : args[0]->type.is_string()      ? args[0]->type.length
                                                                            : 64));
      if (e.names.size() > 3 && !e.names[3].empty()) {
        // CONVERT(x USING charset): the charset's default collation.
        const CharsetInfo* cs = FindCharset(e.names[3]);
        if (cs == nullptr) return SqlError(ErrorCode::kUnknownCharacterSet, "Unknown character set: '{}'", e.names[3]);
        t.collation = cs->default_collation == kDefaultCollation ? 0 : cs->default_collation;
      }
    } else {
      return SqlError(ErrorCode::kNotSupportedYet,
                      "This version of Shale doesn't yet support 'CAST AS {}'", type);
    }
    // CAST(0x41 AS SIGNED) is 65: a hex literal cast to a number is one.
    if (IsHexLiteral(*e.children[0]) && t.is_numeric()) {
      args[0] = HexLiteralNumber(*e.children[0]);
    }
    return Expr::Cast(args[0], t);
  }
  if (auto it = kScalar.find(n); it != kScalar.end()) {
    SHALE_RETURN_IF_ERROR(arg_count(it->second.second.first, it->second.second.second));
    SHALE_ASSIGN_OR_RETURN(auto args, bind_args());
    return Expr::Function(it->second.first, std::move(args));
  }
  if (n == "IF") {
    SHALE_RETURN_IF_ERROR(arg_count(3, 3));
    SHALE_ASSIGN_OR_RETURN(auto args, bind_args());
    return Expr::Case(std::move(args), /*has_else=*/true);
  }
  if (n == "NULLIF") {
    // NULLIF(a, b) = CASE WHEN a = b THEN NULL ELSE a END.
    SHALE_RETURN_IF_ERROR(arg_count(2, 2));
    SHALE_ASSIGN_OR_RETURN(auto args, bind_args());
    auto null = std::make_shared<Expr>(*Expr::Constant(Value::Null()));
    null->type = args[0]->type;
    auto e2 = Expr::Case({Expr::Compare(sierra::CompareOp::kEq, args[0], args[1]), ExprPtr(null), args[0]},
                         true);
    auto typed = std::make_shared<Expr>(*e2);
    typed->nullable = true;
    return ExprPtr(typed);
  }
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
  if (n == "VALUES" && values_offset_ >= 0) {
    SHALE_RETURN_IF_ERROR(arg_count(1, 1));
    if (e.children[0]->kind != ast::ExprKind::kColumn) return SyntaxError(e.text, 1);
    SHALE_ASSIGN_OR_RETURN(ExprPtr col, BindColumn(*e.children[0], scope));
    return Expr::ColumnRef(col->column + values_offset_, col->name, col->type, col->nullable);
  }
  if (n == "LAST_INSERT_ID") {
    // LAST_INSERT_ID(): the session's value (no AUTO_INCREMENT yet, so only
    // LAST_INSERT_ID(expr) sets it). LAST_INSERT_ID(expr) returns expr as
    // BIGINT UNSIGNED and remembers it; expr must be a constant here (no
    // per-row side effects in plans yet).
    SHALE_RETURN_IF_ERROR(arg_count(0, 1));
    uint64_t id = ctx_.last_insert_id;
    if (e.children.size() == 1) {
      Scope none;
      auto bound = BindExpr(*e.children[0], none);
      if (!bound.ok() && bound.status().mysql_code() == static_cast<uint16_t>(ErrorCode::kBadField)) {
        return SqlError(ErrorCode::kNotSupportedYet,
                        "This version of Shale doesn't yet support 'LAST_INSERT_ID(expr) of a non-constant expr'");
      }
      SHALE_RETURN_IF_ERROR(bound.status());
      SHALE_ASSIGN_OR_RETURN(Value v, sierra::Evaluate(**bound, {}));
      id = v.is_null() ? 0 : static_cast<uint64_t>(ToInt64Lenient(v));
      if (ctx_.set_last_insert_id != nullptr) *ctx_.set_last_insert_id = id;
    }
    auto c = std::make_shared<Expr>(*Expr::Constant(Value::Int(static_cast<int64_t>(id))));
    c->type = SqlType{TypeId::kBigInt, 20, 0, /*is_unsigned=*/true};
    return ExprPtr(c);
  }
  if (n == "ROW_COUNT") {
    SHALE_RETURN_IF_ERROR(no_args());
    return Expr::Constant(Value::Int(ctx_.row_count));
  }
  if (n == "FOUND_ROWS") {
    SHALE_RETURN_IF_ERROR(no_args());
    auto c = std::make_shared<Expr>(*Expr::Constant(Value::Int(static_cast<int64_t>(ctx_.found_rows))));
    c->type = SqlType{TypeId::kBigInt, 20, 0, /*is_unsigned=*/true};
    return ExprPtr(c);
  }
  (void)scope;
  std::string db = ctx_.current_db.empty() ? "" : ctx_.current_db + ".";
  return SqlError(ErrorCode::kSpDoesNotExist, "FUNCTION {}{} does not exist", db, n);
}

int Binder::GroupRowColumn(int column) {
  AggregateBinding* agg = agg_;
  for (size_t i = 0; i < agg->group_by.size(); ++i) {
    const ExprPtr& g = agg->group_by[i];
    if (g->kind == sierra::ExprKind::kColumnRef && g->column == column) return static_cast<int>(i);
  }
  const ColumnInfo& info = agg->input.source->columns[column];
  return agg->AnyValueColumn(Expr::ColumnRef(column, info.name, info.type, info.nullable), info.name);
}

Result<ExprPtr> Binder::BindExpr(const ast::Expr& e, const Scope& scope) {
  // A subquery is never a GROUP BY expression: bind it (and expressions
  // holding one) part by part, so each subquery is bound once.
  if (agg_ && !agg_->inside_call && !ContainsAggregate(e) && !ContainsSubquery(e)) {
    auto grouped = BindGrouped(e, scope.clause);
    if (!grouped.ok()) return grouped.status();
    if (*grouped) return *grouped;
  }
  return BindExprInner(e, scope);
}

Result<ExprPtr> Binder::BindExprInner(const ast::Expr& e, const Scope& scope) {
  switch (e.kind) {
    case ast::ExprKind::kLiteral:
      if (e.hex_number) {
        // In string context a binary string (VARBINARY, as MySQL types it).
        auto c = std::make_shared<Expr>(*Expr::Constant(e.value));
        c->type = SqlType::Varbinary(static_cast<uint32_t>(e.value.as_string().size()));
        return ExprPtr(c);
      }
      return Expr::Constant(e.value);
    case ast::ExprKind::kColumn:
      return BindColumn(e, scope);
    case ast::ExprKind::kStar:
    case ast::ExprKind::kDefault:
      return SyntaxError(e.text, 1);
    case ast::ExprKind::kSystemVar: {
      const auto* vars = e.scope == "global" && ctx_.global_variables ? ctx_.global_variables
                                                                      : ctx_.variables;
      auto it = vars->find(e.name);
      if (it == vars->end()) {
        return SqlError(ErrorCode::kUnknownSystemVariable, "Unknown system variable '{}'", e.name);
      }
      auto c = std::make_shared<Expr>(*Expr::Constant(it->second));
      if (it->second.is_null()) c->type = SqlType::Varchar(0);
      return ExprPtr(c);
    }
    case ast::ExprKind::kUserVar: {
      if (!e.children.empty()) {
        // @name := value: assigned per evaluated row (and the variable
        // read per row from here on, so @n := @n + 1 counts rows).
        assigned_user_vars_.insert(e.name);
        SHALE_ASSIGN_OR_RETURN(ExprPtr value, BindExpr(*e.children[0], scope));
        return Expr::Function(sierra::ScalarFunction::kSetUserVar, {Expr::Constant(Value::String(e.name)), value});
      }
      if (assigned_user_vars_.count(e.name) != 0) {
        Value now;
        if (ctx_.user_variables != nullptr) {
          auto it = ctx_.user_variables->find(e.name);
          if (it != ctx_.user_variables->end()) now = it->second;
        }
        auto get = std::make_shared<Expr>(
            *Expr::Function(sierra::ScalarFunction::kGetUserVar, {Expr::Constant(Value::String(e.name))}));
        if (!now.is_null()) get->type = Expr::Constant(now)->type;
        return ExprPtr(get);
      }
      // An unset variable is NULL (of a string type, as in MySQL).
      Value v;
      if (ctx_.user_variables != nullptr) {
        auto it = ctx_.user_variables->find(e.name);
        if (it != ctx_.user_variables->end()) v = it->second;
      }
      auto c = std::make_shared<Expr>(*Expr::Constant(v));
      if (v.is_null()) c->type = SqlType::Varchar(0);
      return ExprPtr(c);
    }
    case ast::ExprKind::kFunction:
      return BindFunction(e, scope);
    case ast::ExprKind::kSubquery:
      return BindSubquery(e, scope);
    case ast::ExprKind::kUnary: {
      SHALE_ASSIGN_OR_RETURN(ExprPtr c, BindNumeric(*e.children[0], scope));
      if (e.op == "NOT") return Expr::Not(c);
      if (e.op == "~") return Expr::Arith(sierra::ArithOp::kBitXor, c, Expr::Constant(Value::Int(-1)));
      if (c->kind == sierra::ExprKind::kConstant && c->constant.is_int() &&
          c->constant.as_int() != INT64_MIN) {
        return Expr::Constant(Value::Int(-c->constant.as_int()));  // a negative literal
      }
      if (c->kind == sierra::ExprKind::kConstant && c->constant.is_decimal()) {
        return Expr::Constant(Value::Dec(c->constant.as_decimal().Negate()));
      }
      if (c->kind == sierra::ExprKind::kConstant && c->constant.is_double() && !c->constant.is_float()) {
        return Expr::Constant(Value::Double(-c->constant.as_double()));
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
        HexComparands(*e.children[0], *e.children[i], &c, &item);
        list.push_back(item);
      }
      return Expr::InList(c, std::move(list), e.negated);
    }
    case ast::ExprKind::kCase: {
      std::vector<ExprPtr> children;
      ExprPtr operand;
      size_t i = 0;
      if (e.has_operand) {
        SHALE_ASSIGN_OR_RETURN(operand, BindExpr(*e.children[0], scope));
        i = 1;
      }
      size_t end = e.children.size() - (e.has_else ? 1 : 0);
      for (; i + 1 < end; i += 2) {
        SHALE_ASSIGN_OR_RETURN(ExprPtr when, BindExpr(*e.children[i], scope));
        SHALE_ASSIGN_OR_RETURN(ExprPtr then, BindExpr(*e.children[i + 1], scope));
        // CASE x WHEN v: the condition x = v.
        children.push_back(operand ? Expr::Compare(sierra::CompareOp::kEq, operand, when) : when);
        children.push_back(then);
      }
      if (e.has_else) {
        SHALE_ASSIGN_OR_RETURN(ExprPtr otherwise, BindExpr(*e.children.back(), scope));
        children.push_back(otherwise);
      }
      return Expr::Case(std::move(children), e.has_else);
    }
    case ast::ExprKind::kLike: {
      SHALE_ASSIGN_OR_RETURN(ExprPtr text, BindExpr(*e.children[0], scope));
      SHALE_ASSIGN_OR_RETURN(ExprPtr pattern, BindExpr(*e.children[1], scope));
      ExprPtr escape;
      if (e.children.size() > 2) {
        // ESCAPE takes a constant of at most one character (MySQL: 1210).
        SHALE_ASSIGN_OR_RETURN(escape, BindExpr(*e.children[2], scope));
        const bool constant = escape->kind == sierra::ExprKind::kConstant;
        const std::string c = constant ? escape->constant.ToText() : std::string();
        const size_t chars = static_cast<size_t>(std::count_if(
            c.begin(), c.end(), [](char ch) { return (static_cast<unsigned char>(ch) & 0xC0) != 0x80; }));
        if (!constant || chars > 1) {
          return SqlError(ErrorCode::kWrongArguments, "Incorrect arguments to ESCAPE");
        }
      }
      return Expr::Like(text, pattern, e.negated, escape);
    }
    case ast::ExprKind::kBetween: {
      SHALE_ASSIGN_OR_RETURN(ExprPtr v, BindExpr(*e.children[0], scope));
      SHALE_ASSIGN_OR_RETURN(ExprPtr lo, BindExpr(*e.children[1], scope));
      SHALE_ASSIGN_OR_RETURN(ExprPtr hi, BindExpr(*e.children[2], scope));
      HexComparands(*e.children[0], *e.children[1], &v, &lo);
      HexComparands(*e.children[0], *e.children[2], &v, &hi);
      ExprPtr both = Expr::Logical(sierra::ExprKind::kAnd, Expr::Compare(sierra::CompareOp::kGe, v, lo),
                                   Expr::Compare(sierra::CompareOp::kLe, v, hi));
      return e.negated ? Expr::Not(both) : both;
    }
    case ast::ExprKind::kBinary: {
      {
        BindArgument bind = [&](const ast::Expr& a) { return BindExpr(a, scope); };
        SHALE_ASSIGN_OR_RETURN(auto date_add, BindIntervalArithmetic(e, bind));
        if (date_add) return *date_add;
      }
      using sierra::ArithOp;
      using sierra::CompareOp;
      const std::string& op = e.op;
      ExprPtr l, r;
      if (op == "=" || op == "<>" || op == "<" || op == "<=" || op == ">" || op == ">=" || op == "<=>") {
        SHALE_ASSIGN_OR_RETURN(l, BindExpr(*e.children[0], scope));
        SHALE_ASSIGN_OR_RETURN(r, BindExpr(*e.children[1], scope));
        HexComparands(*e.children[0], *e.children[1], &l, &r);
      } else {
        // Arithmetic, bit and logical operators read their operands as
        // numbers.
        SHALE_ASSIGN_OR_RETURN(l, BindNumeric(*e.children[0], scope));
        SHALE_ASSIGN_OR_RETURN(r, BindNumeric(*e.children[1], scope));
      }
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
      if (op == "/") return Expr::Arith(ArithOp::kDiv, l, r);
      if (op == "&") return Expr::Arith(ArithOp::kBitAnd, l, r);
      if (op == "|") return Expr::Arith(ArithOp::kBitOr, l, r);
      if (op == "^") return Expr::Arith(ArithOp::kBitXor, l, r);
      if (op == "<<") return Expr::Arith(ArithOp::kShiftLeft, l, r);
      if (op == ">>") return Expr::Arith(ArithOp::kShiftRight, l, r);
      return Status::Internal("unknown operator " + op);
    }
  }
  return Status::Internal("unknown expression kind");
}

Result<ExprPtr> Binder::BindSubquery(const ast::Expr& e, const Scope& scope) {
  if (!collecting_applies_ || (agg_ && !above_aggregate_)) {
    return SqlError(ErrorCode::kNotSupportedYet,
                    "This version of Shale doesn't yet support 'subqueries in this clause'");
  }
  if (in_aggregate_arg_) {
    return SqlError(ErrorCode::kNotSupportedYet,
                    "This version of Shale doesn't yet support 'subqueries in aggregate arguments'");
  }
  PendingApply a;
  if (e.op == "EXISTS") {
    a.kind = sierra::ApplyKind::kExists;
  } else if (e.op == "IN") {
    a.kind = sierra::ApplyKind::kIn;
  } else if (!e.op.empty()) {
    a.kind = e.name == "ALL" ? sierra::ApplyKind::kAll : sierra::ApplyKind::kAny;
  }
  if (!e.children.empty()) {
    SHALE_ASSIGN_OR_RETURN(a.lhs, BindExpr(*e.children[0], scope));
  }
  using sierra::CompareOp;
  static const std::map<std::string, CompareOp> kOps = {
      {"=", CompareOp::kEq}, {"<>", CompareOp::kNe}, {"<", CompareOp::kLt}, {"<=", CompareOp::kLe},
      {">", CompareOp::kGt}, {">=", CompareOp::kGe}, {"<=>", CompareOp::kNullSafeEq}};
  if (auto it = kOps.find(e.op); it != kOps.end()) a.op = it->second;
  // The subquery binds in its own binder, seeing this query's names as
  // outer references.
  Binder sub(ctx_);
  sub.outer_ = &scope;
  SHALE_ASSIGN_OR_RETURN(a.plan, sub.BindSelect(*e.subquery));
  if (agg_ && sierra::HasOuterRefs(*a.plan)) {
    // Above an aggregate the subquery runs per group: its outer references
    // read the group row (a grouped column, else the group's first value).
    std::map<int, int> group_column;
    for (int c : sierra::OuterColumns(*a.plan)) group_column[c] = GroupRowColumn(c);
    a.plan = sierra::RemapOuter(*a.plan, [&](int c) { return group_column.at(c); });
  }
  if (a.kind != sierra::ApplyKind::kExists && a.plan->columns.size() != 1) {
    return SqlError(ErrorCode::kOperandColumns, "Operand should contain 1 column(s)");
  }
  a.column.name = e.text;
  if (a.kind == sierra::ApplyKind::kScalar) {
    a.column.type = a.plan->columns[0].type;
    a.column.nullable = true;
  } else {
    a.column.type = SqlType::BigInt();
    a.column.nullable = a.kind != sierra::ApplyKind::kExists;
  }
  const int column = static_cast<int>(apply_base_ + applies_.size());
  ColumnInfo info = a.column;
  applies_.push_back(std::move(a));
  ExprPtr ref = Expr::ColumnRef(column, e.text, info.type, info.nullable);
  return e.negated ? Expr::Not(ref) : ref;
}

// The type of a UNION column holding values of types a and b.
SqlType UnionType(const SqlType& a, const SqlType& b) {
  if (a.id == TypeId::kNull) return b;
  if (b.id == TypeId::kNull) return a;
  if (a.is_integer() && b.is_integer()) return a.id == TypeId::kBigInt ? a : b;
  if (a.id == b.id) return a.length >= b.length ? a : b;
  return SqlType::Varchar(std::max<uint32_t>({a.length, b.length, 20}));
}

Result<LogicalPtr> Binder::BindUnion(const ast::SelectStmt& s) {
  std::vector<LogicalPtr> terms;
  for (const ast::SelectStmt& t : s.union_terms) {
    SHALE_ASSIGN_OR_RETURN(LogicalPtr plan, BindSelect(t));
    if (!terms.empty() && plan->columns.size() != terms[0]->columns.size()) {
      return SqlError(ErrorCode::kWrongNumberOfColumnsInSelect,
                      "The used SELECT statements have a different number of columns");
    }
    terms.push_back(std::move(plan));
  }
  // Names from the first term; types common to all.
  std::vector<ColumnInfo> columns;
  for (size_t i = 0; i < terms[0]->columns.size(); ++i) {
    ColumnInfo c;
    c.name = terms[0]->columns[i].name;
    c.type = terms[0]->columns[i].type;
    c.nullable = false;
    for (const LogicalPtr& t : terms) {
      c.type = UnionType(c.type, t->columns[i].type);
      c.nullable |= t->columns[i].nullable;
    }
    columns.push_back(std::move(c));
  }
  // UNION DISTINCT removes duplicates from everything to its left.
  size_t distinct_upto = 0;  // terms [0, distinct_upto) are deduplicated together
  for (size_t i = 0; i < s.union_all.size(); ++i) {
    if (!s.union_all[i]) distinct_upto = i + 2;
  }
  LogicalPtr plan;
  std::vector<LogicalPtr> rest;
  if (distinct_upto > 0) {
    std::vector<LogicalPtr> left(std::make_move_iterator(terms.begin()),
                                 std::make_move_iterator(terms.begin() + static_cast<std::ptrdiff_t>(distinct_upto)));
    plan = LogicalOperator::Distinct(LogicalOperator::Union(std::move(left), columns));
    rest.push_back(std::move(plan));
    for (size_t i = distinct_upto; i < terms.size(); ++i) rest.push_back(std::move(terms[i]));
  } else {
    rest = std::move(terms);
  }
  plan = rest.size() == 1 ? std::move(rest[0]) : LogicalOperator::Union(std::move(rest), columns);
  // ORDER BY: output columns by name or position.
  if (!s.order_by.empty()) {
    Scope scope;
    scope.source = plan.get();
    scope.tables = {{"", "", 0, plan->columns.size()}};
    scope.clause = "order clause";
    std::vector<sierra::SortKey> keys;
    for (const ast::OrderItem& item : s.order_by) {
      const ast::Expr& oe = *item.expr;
      ExprPtr key;
      if (oe.kind == ast::ExprKind::kLiteral && oe.value.is_int()) {
        int64_t pos = oe.value.as_int();
        if (pos < 1 || static_cast<size_t>(pos) > plan->columns.size()) {
          return SqlError(ErrorCode::kBadField, "Unknown column '{}' in 'order clause'", pos);
        }
        const ColumnInfo& c = plan->columns[pos - 1];
        key = Expr::ColumnRef(static_cast<int>(pos - 1), c.name, c.type, c.nullable);
      } else {
        SHALE_ASSIGN_OR_RETURN(key, BindExpr(oe, scope));
      }
      keys.push_back({key, item.desc});
    }
    plan = LogicalOperator::Sort(std::move(plan), std::move(keys));
  }
  if (s.limit || s.offset) {
    plan = LogicalOperator::Limit(std::move(plan), s.limit.value_or(UINT64_MAX), s.offset);
  }
  return plan;
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
    for (size_t i = 0; i < ncols; ++i) {
      if (!table->columns[i].hidden) targets.push_back(static_cast<int>(i));
    }
  } else {
    std::set<int> seen;
    for (const std::string& name : s.columns) {
      int idx = table->FindColumn(name);
      if (idx >= 0 && table->columns[idx].hidden) idx = -1;
      if (idx < 0) return SqlError(ErrorCode::kBadField, "Unknown column '{}' in 'field list'", name);
      if (!seen.insert(idx).second) {
        return SqlError(ErrorCode::kFieldSpecifiedTwice, "Column '{}' specified twice", name);
      }
      targets.push_back(idx);
    }
  }
  auto default_for = [&](int col) -> Result<ExprPtr> {
    const catalog::ColumnDef& c = table->columns[col];
    // The executor allocates the hidden row id and AUTO_INCREMENT values
    // for a NULL.
    if (c.hidden || c.auto_increment) return Expr::Constant(Value::Null());
    if (c.default_now) return CurrentTimestampFor(c.type);
    if (c.default_value) return Expr::Constant(*c.default_value);
    if (c.nullable) return Expr::Constant(Value::Null());
    return SqlError(ErrorCode::kNoDefaultForField, "Field '{}' doesn't have a default value", c.name);
  };
  std::vector<std::vector<ExprPtr>> rows;
  Scope none;
  auto scan = LogicalOperator::Scan(table, "");
  LogicalPtr source;
  if (s.select) {
    // INSERT ... SELECT: the query's columns go to the target columns, the
    // others take their defaults.
    Binder sub(ctx_);
    SHALE_ASSIGN_OR_RETURN(LogicalPtr query, sub.BindSelect(*s.select));
    if (query->columns.size() != targets.size()) {
      return SqlError(ErrorCode::kWrongValueCount, "Column count doesn't match value count at row 1");
    }
    std::vector<ExprPtr> exprs(ncols);
    for (size_t i = 0; i < targets.size(); ++i) {
      const ColumnInfo& c = query->columns[i];
      exprs[targets[i]] = Expr::ColumnRef(static_cast<int>(i), c.name, c.type, c.nullable);
    }
    for (size_t c = 0; c < ncols; ++c) {
      if (!exprs[c]) {
        SHALE_ASSIGN_OR_RETURN(exprs[c], default_for(static_cast<int>(c)));
      }
    }
    source = LogicalOperator::Project(std::move(query), std::move(exprs), scan->columns);
  }
  if (s.value_rows != nullptr) {
    // Converted values: rows of constants. When they name every column in
    // table order they are the rows themselves, shared with the statement;
    // else each is laid out with the other columns' defaults (expressions
    // then, where a default is not a constant).
    std::vector<ExprPtr> defaults(ncols);
    std::vector<bool> given(ncols, false);
    for (int c : targets) given[c] = true;
    bool constant = true;
    for (size_t c = 0; c < ncols; ++c) {
      if (!given[c]) {
        SHALE_ASSIGN_OR_RETURN(defaults[c], default_for(static_cast<int>(c)));
        constant &= defaults[c]->kind == sierra::ExprKind::kConstant;
      }
    }
    const std::vector<std::vector<Value>>& value_rows = *s.value_rows;
    for (size_t r = 0; r < value_rows.size(); ++r) {
      if (value_rows[r].size() != targets.size()) {
        return SqlError(ErrorCode::kWrongValueCount, "Column count doesn't match value count at row {}", r + 1);
      }
    }
    bool in_order = targets.size() == ncols;
    for (size_t i = 0; in_order && i < targets.size(); ++i) in_order = targets[i] == static_cast<int>(i);
    if (in_order) {
      source = LogicalOperator::ValueRows(scan->columns, s.value_rows);
    } else if (constant) {
      auto laid_out = std::make_shared<std::vector<std::vector<Value>>>();
      laid_out->reserve(value_rows.size());
      for (const std::vector<Value>& values : value_rows) {
        std::vector<Value>& row = laid_out->emplace_back(ncols);
        for (size_t c = 0; c < ncols; ++c) {
          if (!given[c]) row[c] = defaults[c]->constant;
        }
        for (size_t i = 0; i < values.size(); ++i) row[targets[i]] = values[i];
      }
      source = LogicalOperator::ValueRows(scan->columns, std::move(laid_out));
    } else {
      rows.reserve(value_rows.size());
      for (const std::vector<Value>& values : value_rows) {
        std::vector<ExprPtr> row = defaults;
        for (size_t i = 0; i < values.size(); ++i) row[targets[i]] = Expr::Constant(values[i]);
        rows.push_back(std::move(row));
      }
    }
  }
  // VALUES with subqueries: each row is its own one-row query (the
  // subqueries are Applies over one empty row), the rows a UNION ALL.
  bool with_subqueries = false;
  for (const auto& values : s.rows) {
    for (const auto& v : values) with_subqueries |= ContainsSubquery(*v);
  }
  std::vector<LogicalPtr> row_queries;
  LogicalPtr empty_row = LogicalOperator::Values({}, {{}});
  Scope row_scope;
  row_scope.source = empty_row.get();
  for (size_t r = 0; r < s.rows.size(); ++r) {
    const auto& values = s.rows[r];
    // VALUES () without a column list: every column takes its default.
    if (values.empty() && s.columns.empty()) {
      std::vector<ExprPtr> row(ncols);
      for (size_t c = 0; c < ncols; ++c) {
        SHALE_ASSIGN_OR_RETURN(row[c], default_for(static_cast<int>(c)));
      }
      if (with_subqueries) {
        row_queries.push_back(LogicalOperator::Project(empty_row->Clone(), std::move(row), scan->columns));
      } else {
        rows.push_back(std::move(row));
      }
      continue;
    }
    if (values.size() != targets.size()) {
      return SqlError(ErrorCode::kWrongValueCount, "Column count doesn't match value count at row {}",
                      r + 1);
    }
    std::vector<ExprPtr> row(ncols);
    if (with_subqueries) StartApplies(0);
    for (size_t i = 0; i < values.size(); ++i) {
      if (values[i]->kind == ast::ExprKind::kDefault) {
        SHALE_ASSIGN_OR_RETURN(row[targets[i]], default_for(targets[i]));
      } else {
        auto bound = BindForColumn(*values[i], with_subqueries ? row_scope : none, table->columns[targets[i]].type);
        if (!bound.ok()) {
          collecting_applies_ = false;
          return bound.status();
        }
        row[targets[i]] = *bound;
      }
    }
    for (size_t c = 0; c < ncols; ++c) {
      if (!row[c]) {
        SHALE_ASSIGN_OR_RETURN(row[c], default_for(static_cast<int>(c)));
      }
    }
    if (with_subqueries) {
      row_queries.push_back(
          LogicalOperator::Project(FinishApplies(empty_row->Clone()), std::move(row), scan->columns));
    } else {
      rows.push_back(std::move(row));
    }
  }
  if (!row_queries.empty()) {
    source = row_queries.size() == 1 ? std::move(row_queries[0])
                                     : LogicalOperator::Union(std::move(row_queries), scan->columns);
  }
  if (!source) source = LogicalOperator::Values(scan->columns, std::move(rows));
  LogicalPtr insert = LogicalOperator::Insert(table, std::move(source));
  if (s.ignore) insert->insert_conflict = sierra::InsertConflict::kIgnore;
  if (s.replace) insert->insert_conflict = sierra::InsertConflict::kReplace;
  if (!s.on_duplicate.empty()) {
    // ON DUPLICATE KEY UPDATE: expressions over the existing row, then the
    // row that was to be inserted (what VALUES(c) reads).
    insert->insert_conflict = sierra::InsertConflict::kUpdate;
    LogicalPtr both = LogicalOperator::Scan(table, "");
    for (const ColumnInfo& c : scan->columns) both->columns.push_back(c);
    Scope scope;
    scope.source = both.get();
    scope.tables = {{table->name, table->db, 0, ncols}};
    values_offset_ = static_cast<int>(ncols);
    for (const ast::Assignment& a : s.on_duplicate) {
      ast::Expr target;
      target.kind = ast::ExprKind::kColumn;
      target.names = a.names;
      auto col = BindColumn(target, scope);
      if (!col.ok()) {
        values_offset_ = -1;
        return col.status();
      }
      auto value = a.value->kind == ast::ExprKind::kDefault ? default_for((*col)->column)
                                                             : BindForColumn(*a.value, scope, (*col)->type);
      if (!value.ok()) {
        values_offset_ = -1;
        return value.status();
      }
      insert->update_columns.push_back((*col)->column);
      insert->exprs.push_back(*value);
    }
    values_offset_ = -1;
  }
  return insert;
}

// ---- UPDATE / DELETE ------------------------------------------------------------

// The table at the bottom of a chain of single-input operators.
std::shared_ptr<const catalog::TableDef> ScannedTable(const LogicalOperator& top) {
  const LogicalOperator* op = &top;
  while (op->kind != sierra::LogicalKind::kScan) op = op->children[0].get();
  return op->table;
}

Result<LogicalPtr> Binder::BindTargetRows(const ast::TableRef& ref, const ast::Expr* where,
                                          const std::vector<ast::OrderItem>& order_by,
                                          std::optional<uint64_t> limit, Scope* scope) {
  SHALE_ASSIGN_OR_RETURN(auto table, ResolveTable(ref.name));
  LogicalPtr plan = LogicalOperator::Scan(table, ref.alias);
  scope->tables = {{ref.alias.empty() ? table->name : ref.alias, table->db, 0, plan->columns.size()}};
  scope->source = plan.get();
  if (where) {
    Scope where_scope = *scope;
    where_scope.clause = "where clause";
    const size_t width = plan->columns.size();
    StartApplies(width);
    auto pred = BindExpr(*where, where_scope);
    collecting_applies_ = false;
    if (!pred.ok()) return pred.status();
    if (applies_.empty()) {
      plan = LogicalOperator::Filter(std::move(plan), *pred);
    } else {
      // Filter above the subqueries' Apply columns, then back to table rows.
      plan = LogicalOperator::Filter(FinishApplies(std::move(plan)), *pred);
      std::vector<ExprPtr> cols;
      std::vector<ColumnInfo> infos(plan->columns.begin(), plan->columns.begin() + static_cast<std::ptrdiff_t>(width));
      for (size_t i = 0; i < width; ++i) {
        cols.push_back(Expr::ColumnRef(static_cast<int>(i), infos[i].name, infos[i].type, infos[i].nullable));
      }
      plan = LogicalOperator::Project(std::move(plan), std::move(cols), std::move(infos));
    }
    scope->source = plan.get();
  }
  if (!order_by.empty()) {
    Scope order_scope = *scope;
    order_scope.clause = "order clause";
    std::vector<sierra::SortKey> keys;
    for (const ast::OrderItem& item : order_by) {
      // No select list here: a number is a constant, as in MySQL.
      SHALE_ASSIGN_OR_RETURN(ExprPtr key, BindExpr(*item.expr, order_scope));
      keys.push_back({key, item.desc});
    }
    plan = LogicalOperator::Sort(std::move(plan), std::move(keys));
    scope->source = plan.get();
  }
  if (limit) {
    plan = LogicalOperator::Limit(std::move(plan), *limit, 0);
    scope->source = plan.get();
  }
  return plan;
}

Result<LogicalPtr> Binder::BindJoinedRows(const ast::TableRef& first, const std::vector<ast::JoinClause>& joins,
                                          const ast::Expr* where, Scope* scope) {
  ast::SelectStmt from;
  from.from = first;
  for (const ast::JoinClause& j : joins) {
    ast::JoinClause copy;
    copy.kind = j.kind;
    copy.table = j.table;
    if (j.on) copy.on = CloneAst(*j.on);
    copy.natural = j.natural;
    copy.using_columns = j.using_columns;
    from.joins.push_back(std::move(copy));
  }
  SHALE_ASSIGN_OR_RETURN(LogicalPtr plan, BindFrom(from, scope));
  scope->source = plan.get();
  if (where == nullptr) return plan;
  Scope where_scope = *scope;
  where_scope.clause = "where clause";
  const size_t width = plan->columns.size();
  StartApplies(width);
  auto bound = BindExpr(*where, where_scope);
  collecting_applies_ = false;
  if (!bound.ok()) return bound.status();
  std::vector<ExprPtr> conjuncts, plain, with_subquery;
  sierra::SplitConjuncts(*bound, &conjuncts);
  for (const ExprPtr& c : conjuncts) {
    int min = INT32_MAX, max = -1;
    ColumnRange(*c, &min, &max);
    (max >= static_cast<int>(width) ? with_subquery : plain).push_back(c);
  }
  if (extended_from_) {
    if (!plain.empty()) plan = LogicalOperator::Filter(std::move(plan), AndAll(plain));
  } else {
    plan = JoinInConnectedOrder(std::move(plan), std::move(plain), scope->tables);
  }
  const bool had_applies = !applies_.empty();
  plan = FinishApplies(std::move(plan));
  if (!with_subquery.empty()) plan = LogicalOperator::Filter(std::move(plan), AndAll(with_subquery));
  if (had_applies) {
    // Back to the joined columns.
    std::vector<ExprPtr> cols;
    std::vector<ColumnInfo> infos(plan->columns.begin(), plan->columns.begin() + static_cast<std::ptrdiff_t>(width));
    for (size_t i = 0; i < width; ++i) {
      cols.push_back(Expr::ColumnRef(static_cast<int>(i), infos[i].name, infos[i].type, infos[i].nullable));
    }
    plan = LogicalOperator::Project(std::move(plan), std::move(cols), std::move(infos));
  }
  scope->source = plan.get();
  return plan;
}

// The target rows of a multi-table statement: the target table's columns
// of each joined row, then `extra` (at least one value, which tells the
// executor to change each target row once however many rows it joined).
LogicalPtr TargetColumns(LogicalPtr rows, const ScopeTable& target, std::vector<ExprPtr> extra) {
  std::vector<ExprPtr> exprs;
  std::vector<ColumnInfo> infos;
  for (size_t i = 0; i < target.count; ++i) {
    const ColumnInfo& c = rows->columns[target.first + i];
    exprs.push_back(Expr::ColumnRef(static_cast<int>(target.first + i), c.name, c.type, c.nullable));
    infos.push_back(c);
  }
  if (extra.empty()) extra.push_back(Expr::Constant(Value::Int(1)));
  for (ExprPtr& e : extra) {
    infos.push_back(ExprColumn("", e));
    exprs.push_back(std::move(e));
  }
  return LogicalOperator::Project(std::move(rows), std::move(exprs), std::move(infos));
}

// Several written tables: each target's operator reads its own slice of
// the joined rows (`offset`, `limit`: its columns, then its values), and
// the operators are stacked, the first target's at the bottom over the
// joined rows, so the executor reads the rows once and changes each table
// from them (src/exec/executor.cc, ExecuteModify).
struct ModifyTarget {
  const ScopeTable* table = nullptr;
  std::vector<int> columns;     // UPDATE: table columns assigned
  std::vector<ExprPtr> values;  // UPDATE: their values over the joined rows
};

Result<LogicalPtr> StackTargets(LogicalPtr rows, std::vector<ModifyTarget> targets, bool is_update) {
  for (size_t i = 0; i < targets.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (targets[j].table->def->id == targets[i].table->def->id) {
        return SqlError(ErrorCode::kNotSupportedYet,
                        "This version of Shale doesn't yet support 'writing one table twice in a multi-table "
                        "{}'", is_update ? "UPDATE" : "DELETE");
      }
    }
  }
  if (targets.size() == 1) {
    ModifyTarget& t = targets[0];
    const size_t width = t.table->count;
    std::vector<ExprPtr> exprs;
    for (size_t i = 0; i < t.values.size(); ++i) {
      exprs.push_back(Expr::ColumnRef(static_cast<int>(width + i), "", t.values[i]->type, t.values[i]->nullable));
    }
    std::shared_ptr<const catalog::TableDef> table = t.table->def;
    LogicalPtr child = TargetColumns(std::move(rows), *t.table, std::move(t.values));
    if (!is_update) return LogicalOperator::Delete(table, std::move(child));
    return LogicalOperator::Update(table, std::move(child), std::move(t.columns), std::move(exprs));
  }
  // One projection holding every target's slice, in order.
  std::vector<ExprPtr> exprs;
  std::vector<ColumnInfo> infos;
  std::vector<std::pair<size_t, size_t>> slices;  // (offset, width) per target
  for (ModifyTarget& t : targets) {
    const size_t offset = exprs.size();
    for (size_t i = 0; i < t.table->count; ++i) {
      const ColumnInfo& c = rows->columns[t.table->first + i];
      exprs.push_back(Expr::ColumnRef(static_cast<int>(t.table->first + i), c.name, c.type, c.nullable));
      infos.push_back(c);
    }
    std::vector<ExprPtr> extra = t.values;
    if (extra.empty()) extra.push_back(Expr::Constant(Value::Int(1)));
    for (ExprPtr& e : extra) {
      infos.push_back(ExprColumn("", e));
      exprs.push_back(std::move(e));
    }
    slices.emplace_back(offset, exprs.size() - offset);
  }
  LogicalPtr plan = LogicalOperator::Project(std::move(rows), std::move(exprs), std::move(infos));
  for (size_t k = 0; k < targets.size(); ++k) {
    ModifyTarget& t = targets[k];
    const size_t width = t.table->count;
    std::vector<ExprPtr> assigned;
    for (size_t i = 0; i < t.values.size(); ++i) {
      assigned.push_back(Expr::ColumnRef(static_cast<int>(width + i), "", t.values[i]->type, t.values[i]->nullable));
    }
    plan = is_update ? LogicalOperator::Update(t.table->def, std::move(plan), std::move(t.columns), std::move(assigned))
                     : LogicalOperator::Delete(t.table->def, std::move(plan));
    plan->offset = slices[k].first;
    plan->limit = slices[k].second;
    plan->stacked_target = true;
  }
  return plan;
}

Result<LogicalPtr> Binder::BindMultiUpdate(const ast::UpdateStmt& s) {
  Scope scope;
  SHALE_ASSIGN_OR_RETURN(LogicalPtr rows, BindJoinedRows(s.table, s.joins, s.where.get(), &scope));
  std::vector<ModifyTarget> targets;
  SetApplies set_applies(this, s.assignments, rows->columns.size());
  for (const ast::Assignment& a : s.assignments) {
    ast::Expr name;
    name.kind = ast::ExprKind::kColumn;
    name.names = a.names;
    SHALE_ASSIGN_OR_RETURN(ExprPtr col, BindColumn(name, scope));
    const ScopeTable* owner = nullptr;
    for (const ScopeTable& t : scope.tables) {
      if (static_cast<size_t>(col->column) >= t.first && static_cast<size_t>(col->column) < t.first + t.count) owner = &t;
    }
    if (owner == nullptr || !owner->def) {
      return SqlError(ErrorCode::kNonUpdatableTable, "The target table {} of the UPDATE is not updatable",
                      owner ? owner->alias : a.names.back());
    }
    ModifyTarget* target = nullptr;
    for (ModifyTarget& t : targets) {
      if (t.table == owner) target = &t;
    }
    if (target == nullptr) {
      targets.push_back({owner, {}, {}});
      target = &targets.back();
    }
    const int column = col->column - static_cast<int>(owner->first);
    if (a.value->kind == ast::ExprKind::kDefault) {
      const catalog::ColumnDef& c = owner->def->columns[column];
      if (c.default_now) {
        target->values.push_back(CurrentTimestampFor(c.type));
      } else if (c.default_value) {
        target->values.push_back(Expr::Constant(*c.default_value));
      } else if (c.nullable) {
        target->values.push_back(Expr::Constant(Value::Null()));
      } else {
        return SqlError(ErrorCode::kNoDefaultForField, "Field '{}' doesn't have a default value", c.name);
      }
    } else {
      SHALE_ASSIGN_OR_RETURN(ExprPtr value, BindForColumn(*a.value, scope, col->type));
      target->values.push_back(std::move(value));
    }
    target->columns.push_back(column);
  }
  rows = set_applies.Finish(std::move(rows));
  return StackTargets(std::move(rows), std::move(targets), /*is_update=*/true);
}

Result<LogicalPtr> Binder::BindMultiDelete(const ast::DeleteStmt& s) {
  Scope scope;
  SHALE_ASSIGN_OR_RETURN(LogicalPtr rows, BindJoinedRows(s.table, s.joins, s.where.get(), &scope));
  std::vector<ModifyTarget> targets;
  for (const ast::TableName& name : s.targets) {
    const ScopeTable* found = nullptr;
    for (const ScopeTable& t : scope.tables) {
      if (!t.alias.empty() && t.alias == name.table && (name.db.empty() || name.db == t.db)) found = &t;
    }
    if (found == nullptr) {
      return SqlError(ErrorCode::kUnknownTable, "Unknown table '{}' in MULTI DELETE", name.table);
    }
    if (!found->def) {
      return SqlError(ErrorCode::kNonUpdatableTable, "The target table {} of the DELETE is not updatable",
                      name.table);
    }
    bool listed = false;
    for (const ModifyTarget& t : targets) listed |= t.table == found;
    if (!listed) targets.push_back({found, {}, {}});
  }
  return StackTargets(std::move(rows), std::move(targets), /*is_update=*/false);
}

Result<LogicalPtr> Binder::BindUpdate(const ast::UpdateStmt& s) {
  if (!s.joins.empty() || s.table.nested) return BindMultiUpdate(s);
  Scope scope;
  SHALE_ASSIGN_OR_RETURN(LogicalPtr rows,
                         BindTargetRows(s.table, s.where.get(), s.order_by, s.limit, &scope));
  std::shared_ptr<const catalog::TableDef> table = ScannedTable(*rows);
  std::vector<int> columns;
  std::vector<ExprPtr> exprs;
  // Subqueries in SET: Applies over the rows to change (read, like the
  // rows, before anything is written); the Update reads the table's
  // columns of each row and the assignments the Apply columns too.
  SetApplies set_applies(this, s.assignments, rows->columns.size());
  for (const ast::Assignment& a : s.assignments) {
    ast::Expr target;
    target.kind = ast::ExprKind::kColumn;
    target.names = a.names;
    SHALE_ASSIGN_OR_RETURN(ExprPtr col, BindColumn(target, scope));
    if (a.value->kind == ast::ExprKind::kDefault) {
      const catalog::ColumnDef& c = table->columns[col->column];
      if (c.default_now) {
        exprs.push_back(CurrentTimestampFor(c.type));
      } else if (c.default_value) {
        exprs.push_back(Expr::Constant(*c.default_value));
      } else if (c.nullable) {
        exprs.push_back(Expr::Constant(Value::Null()));
      } else {
        return SqlError(ErrorCode::kNoDefaultForField, "Field '{}' doesn't have a default value",
                        c.name);
      }
    } else {
      SHALE_ASSIGN_OR_RETURN(ExprPtr value, BindForColumn(*a.value, scope, col->type));
      exprs.push_back(std::move(value));
    }
    columns.push_back(col->column);
  }
  rows = set_applies.Finish(std::move(rows));
  return LogicalOperator::Update(table, std::move(rows), std::move(columns), std::move(exprs));
}

Result<LogicalPtr> Binder::BindDelete(const ast::DeleteStmt& s) {
  if (s.multi) return BindMultiDelete(s);
  Scope scope;
  SHALE_ASSIGN_OR_RETURN(LogicalPtr rows,
                         BindTargetRows(s.table, s.where.get(), s.order_by, s.limit, &scope));
  std::shared_ptr<const catalog::TableDef> table = ScannedTable(*rows);
  return LogicalOperator::Delete(table, std::move(rows));
}

// ---- ALTER TABLE ----------------------------------------------------------------

Result<catalog::ColumnDef> Binder::BindColumnDefinition(const ast::ColumnDefinition& cd,
                                                        const std::string& db) {
  if (cd.auto_increment) {
    return SqlError(ErrorCode::kNotSupportedYet,
                    "This version of Shale doesn't yet support 'AUTO_INCREMENT in ALTER TABLE column changes'");
  }
  ast::CreateTableStmt one;
  one.table = {db, "t"};
  ast::ColumnDefinition copy;
  copy.name = cd.name;
  copy.type_name = cd.type_name;
  copy.length = cd.length;
  copy.scale = cd.scale;
  copy.is_unsigned = cd.is_unsigned;
  copy.not_null = cd.not_null;
  copy.charset = cd.charset;
  copy.collation = cd.collation;
  copy.binary = cd.binary;
  copy.elements = cd.elements;
  if (cd.default_value) copy.default_value = CloneAst(*cd.default_value);
  if (cd.on_update) copy.on_update = CloneAst(*cd.on_update);
  one.columns.push_back(std::move(copy));
  SHALE_ASSIGN_OR_RETURN(BoundStatement bound, BindCreateTable(one));
  return std::get<CreateTableCmd>(bound).def.columns[0];
}

Result<BoundStatement> Binder::BindAlterTable(const ast::AlterTableStmt& s) {
  SHALE_ASSIGN_OR_RETURN(auto table, ResolveTable(s.table));
  AlterTableCmd cmd;
  cmd.db = table->db;
  cmd.table = table->name;
  cmd.old_table = table;
  if (s.auto_increment) cmd.auto_increment = static_cast<int64_t>(std::min<uint64_t>(*s.auto_increment, INT64_MAX));
  if (s.rename_to) {
    SHALE_ASSIGN_OR_RETURN(std::string db, ResolveDb(s.rename_to->db));
    SHALE_RETURN_IF_ERROR(CheckTableName(s.rename_to->table));
    cmd.rename_to = std::make_pair(db, s.rename_to->table);
  }
  if (!s.column_changes.empty()) {
    if (!s.add_indexes.empty() || !s.drop_indexes.empty()) {
      return SqlError(ErrorCode::kNotSupportedYet,
                      "This version of Shale doesn't yet support 'column and index changes in one ALTER TABLE'");
    }
    catalog::TableDef def = *table;
    std::vector<int> source(def.columns.size());
    for (size_t i = 0; i < source.size(); ++i) source[i] = static_cast<int>(i);
    auto find = [&](const std::string& name) {
      int i = def.FindColumn(name);
      return i >= 0 && def.columns[i].hidden ? -1 : i;
    };
    // Visible columns end before the hidden row id, which stays last.
    auto visible_end = [&]() {
      return static_cast<int>(def.columns.size()) - (def.columns.back().hidden ? 1 : 0);
    };
    auto place = [&](const ast::ColumnChange& c, catalog::ColumnDef col, int src) -> Status {
      int at = visible_end();
      if (c.first) {
        at = 0;
      } else if (!c.after.empty()) {
        int after = find(c.after);
        if (after < 0) return SqlError(ErrorCode::kBadField, "Unknown column '{}' in '{}'", c.after, def.name);
        at = after + 1;
      }
      def.columns.insert(def.columns.begin() + at, std::move(col));
      source.insert(source.begin() + at, src);
      return Status::OK();
    };
    std::vector<ast::IndexDefinition> unique_adds;
    for (const ast::ColumnChange& c : s.column_changes) {
      using Kind = ast::ColumnChange::Kind;
      if (c.kind != Kind::kDrop && c.def.primary_key) {
        return SqlError(ErrorCode::kNotSupportedYet,
                        "This version of Shale doesn't yet support 'changing the primary key'");
      }
      if (c.kind == Kind::kAdd) {
        if (find(c.def.name) >= 0) return SqlError(ErrorCode::kDupFieldName, "Duplicate column name '{}'", c.def.name);
        SHALE_ASSIGN_OR_RETURN(catalog::ColumnDef col, BindColumnDefinition(c.def, table->db));
        SHALE_RETURN_IF_ERROR(place(c, std::move(col), -1));
        if (c.def.unique) unique_adds.push_back({"", {c.def.name}, true});
        continue;
      }
      int i = find(c.name);
      if (i < 0) {
        if (c.kind == Kind::kDrop) {
          return SqlError(ErrorCode::kCantDropFieldOrKey, "Can't DROP COLUMN `{}`; check that it exists", c.name);
        }
        return SqlError(ErrorCode::kBadField, "Unknown column '{}' in '{}'", c.name, def.name);
      }
      const int old_index = source[i];
      if (c.kind == Kind::kDrop) {
        if (old_index >= 0 && std::count(table->primary.key_columns.begin(), table->primary.key_columns.end(), old_index)) {
          return SqlError(ErrorCode::kNotSupportedYet,
                          "This version of Shale doesn't yet support 'dropping a primary-key column'");
        }
        def.columns.erase(def.columns.begin() + i);
        source.erase(source.begin() + i);
        if (visible_end() == 0) {
          return SqlError(ErrorCode::kCantRemoveAllFields,
                          "You can't delete all columns with ALTER TABLE; use DROP TABLE instead");
        }
        continue;
      }
      if (c.kind == Kind::kChange && !EqualsIgnoreCase(c.name, c.def.name) && find(c.def.name) >= 0) {
        return SqlError(ErrorCode::kDupFieldName, "Duplicate column name '{}'", c.def.name);
      }
      SHALE_ASSIGN_OR_RETURN(catalog::ColumnDef col, BindColumnDefinition(c.def, table->db));
      if (old_index >= 0 && std::count(table->primary.key_columns.begin(), table->primary.key_columns.end(), old_index)) {
        col.nullable = false;  // primary-key columns stay NOT NULL
      }
      if (c.first || !c.after.empty()) {
        def.columns.erase(def.columns.begin() + i);
        source.erase(source.begin() + i);
        SHALE_RETURN_IF_ERROR(place(c, std::move(col), old_index));
      } else {
        def.columns[i] = std::move(col);
      }
      if (c.def.unique) unique_adds.push_back({"", {c.def.name}, true});
    }
    // Key columns follow their columns to their new positions.
    std::vector<int> new_pos(table->columns.size(), -1);
    for (size_t i = 0; i < source.size(); ++i) {
      if (source[i] >= 0) new_pos[source[i]] = static_cast<int>(i);
    }
    for (int& k : def.primary.key_columns) k = new_pos[k];
    std::vector<catalog::RepresentationDef> indexes;
    for (catalog::RepresentationDef index : def.indexes) {
      std::vector<int> cols;
      for (int k : index.key_columns) {
        if (new_pos[k] >= 0) cols.push_back(new_pos[k]);  // a dropped column leaves the index
      }
      if (cols.empty()) continue;
      index.key_columns = std::move(cols);
      index.slices.clear();
      indexes.push_back(std::move(index));
    }
    def.indexes = std::move(indexes);
    SHALE_RETURN_IF_ERROR(ResolveIndexes(def, unique_adds, &def.indexes));
    cmd.new_def = std::move(def);
    cmd.column_source = std::move(source);
    return BoundStatement(std::move(cmd));
  }
  std::vector<catalog::RepresentationDef> kept;
  for (const std::string& name : s.drop_indexes) {
    if (table->FindIndex(name) < 0 ||
        std::find(cmd.drop_indexes.begin(), cmd.drop_indexes.end(), name) != cmd.drop_indexes.end()) {
      return SqlError(ErrorCode::kCantDropFieldOrKey, "Can't DROP INDEX `{}`; check that it exists", name);
    }
    cmd.drop_indexes.push_back(name);
  }
  for (const catalog::RepresentationDef& index : table->indexes) {
    bool dropped = false;
    for (const std::string& name : cmd.drop_indexes) dropped |= EqualsIgnoreCase(name, index.name);
    if (!dropped) kept.push_back(index);
  }
  size_t first_new = kept.size();
  SHALE_RETURN_IF_ERROR(ResolveIndexes(*table, s.add_indexes, &kept));
  cmd.add_indexes.assign(kept.begin() + static_cast<std::ptrdiff_t>(first_new), kept.end());
  return BoundStatement(std::move(cmd));
}

// ---- column types ---------------------------------------------------------------

// The SqlType of a column definition's type name, length, scale and UNSIGNED,
// with MySQL's limits (DECIMAL: precision 1..65, scale <= 30 and <= precision).
Result<SqlType> BindColumnType(const ast::ColumnDefinition& cd) {
  const std::string& n = cd.type_name;
  SHALE_ASSIGN_OR_RETURN(auto temporal, BindTemporalColumnType(cd));
  if (temporal) return *temporal;
  static const std::map<std::string, TypeId> kIntegers = {
      {"TINYINT", TypeId::kTinyInt},     {"INT1", TypeId::kTinyInt},   {"SMALLINT", TypeId::kSmallInt},
      {"INT2", TypeId::kSmallInt},       {"MEDIUMINT", TypeId::kMediumInt}, {"INT3", TypeId::kMediumInt},
      {"MIDDLEINT", TypeId::kMediumInt}, {"INT", TypeId::kInt},          {"INTEGER", TypeId::kInt},
      {"INT4", TypeId::kInt},            {"BIGINT", TypeId::kBigInt},    {"INT8", TypeId::kBigInt},
  };
  if (auto it = kIntegers.find(n); it != kIntegers.end()) {
    if (cd.scale) return SyntaxError(n, 1);
    return SqlType::Integer(it->second, cd.is_unsigned);
  }
  if (n == "BOOL" || n == "BOOLEAN") return SqlType::Integer(TypeId::kTinyInt, false);
  if (n == "DECIMAL" || n == "DEC" || n == "NUMERIC" || n == "FIXED") {
    uint32_t precision = cd.length.value_or(10);
    uint32_t scale = cd.scale.value_or(0);
    if (precision > 65) {
      return SqlError(ErrorCode::kTooBigPrecision,
                      "Too big precision {} specified for '{}'. Maximum is 65", precision, cd.name);
    }
    if (scale > 30) {
      return SqlError(ErrorCode::kTooBigScale, "Too big scale {} specified for '{}'. Maximum is 30",
                      scale, cd.name);
    }
    if (scale > precision) {
      return SqlError(ErrorCode::kMBiggerThanD,
                      "For float(M,D), double(M,D) or decimal(M,D), M must be >= D (column '{}')",
                      cd.name);
    }
    if (precision == 0) precision = 10;
    SqlType t = SqlType::Decimal(precision, static_cast<uint8_t>(scale));
    t.is_unsigned = cd.is_unsigned;
    return t;
  }
  if (n == "DOUBLE" || n == "REAL" || n == "FLOAT" || n == "FLOAT4" || n == "FLOAT8") {
    bool single = n == "FLOAT" || n == "FLOAT4";
    // FLOAT(p) with p > 24 is a DOUBLE.
    if (single && cd.length && !cd.scale && *cd.length > 24) single = false;
    if (single && cd.length && !cd.scale && *cd.length > 53) {
      return SqlError(ErrorCode::kWrongFieldSpec, "Incorrect column specifier for column '{}'", cd.name);
    }
    SqlType t = single ? SqlType::Float() : SqlType::Double();
    if (!single) t.length = 22;
    if (cd.scale) {
      if (*cd.scale > 30) {
        return SqlError(ErrorCode::kTooBigScale, "Too big scale {} specified for '{}'. Maximum is 30",
                        *cd.scale, cd.name);
      }
      if (*cd.scale > *cd.length) {
        return SqlError(ErrorCode::kMBiggerThanD,
                        "For float(M,D), double(M,D) or decimal(M,D), M must be >= D (column '{}')",
                        cd.name);
      }
      t.length = *cd.length;
      t.scale = static_cast<uint8_t>(*cd.scale);
    }
    t.is_unsigned = cd.is_unsigned;
    return t;
  }
  if (auto t = BindStringColumnType(cd)) return std::move(*t);
  if (n == "VARCHAR" || n == "NVARCHAR") {
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
    SqlType t = SqlType::Varchar(*cd.length);
    SHALE_RETURN_IF_ERROR(ApplyCharset(cd, &t));
    return t;
  }
  return SqlError(ErrorCode::kNotSupportedYet,
                  "This version of Shale doesn't yet support 'column type {}'", n);
}

// The collation of a text column from its CHARACTER SET, COLLATE and BINARY
// attributes (else `table_collation`, 0 for the default): 1115 for an
// unknown charset, 1273 for an unknown collation, 1253 when they disagree.
// A text type in CHARACTER SET binary becomes its binary kind (CHAR ->
// BINARY, VARCHAR -> VARBINARY, TEXT -> BLOB) as in MySQL.
Status ApplyCharset(const ast::ColumnDefinition& cd, SqlType* t, uint16_t table_collation) {
  if (t->is_binary_string() || t->id == TypeId::kJson) {
    if (!cd.charset.empty() || !cd.collation.empty()) {
      // MySQL accepts only binary here; others are a syntax error.
      const CharsetInfo* cs = cd.charset.empty() ? nullptr : FindCharset(cd.charset);
      if (!cd.charset.empty() && (!cs || std::string_view(cs->name) != "binary") && t->id != TypeId::kJson) {
        return SqlError(ErrorCode::kParse, "You have an error in your SQL syntax; {} of column '{}' cannot have a character set",
                        t->ToString(), cd.name);
      }
    }
    return Status::OK();
  }
  SHALE_ASSIGN_OR_RETURN(uint16_t coll, ResolveCollation(cd.charset, cd.collation, cd.binary, table_collation));
  if (coll == kCollationBinary) {
    switch (t->id) {
      case TypeId::kChar: t->id = TypeId::kBinary; break;
      case TypeId::kVarchar: t->id = TypeId::kVarbinary; break;
      case TypeId::kText: t->id = TypeId::kBlob; break;
      default: break;
    }
    if (t->is_binary_string()) {
      t->collation = 0;
      return Status::OK();
    }
  }
  t->collation = coll == kDefaultCollation ? 0 : coll;
  return Status::OK();
}

Result<uint16_t> ResolveCollation(const std::string& charset, const std::string& collation, bool binary,
                                  uint16_t fallback) {
  const CharsetInfo* cs = nullptr;
  if (!charset.empty()) {
    cs = FindCharset(charset);
    if (!cs) return SqlError(ErrorCode::kUnknownCharacterSet, "Unknown character set: '{}'", charset);
  }
  if (!collation.empty()) {
    const CollationInfo* co = FindCollation(collation);
    if (!co) return SqlError(ErrorCode::kUnknownCollation, "Unknown collation: '{}'", collation);
    if (cs && std::string_view(co->charset) != cs->name) {
      return SqlError(ErrorCode::kCollationCharsetMismatch, "COLLATION '{}' is not valid for CHARACTER SET '{}'",
                      co->name, cs->name);
    }
    return co->id;
  }
  if (cs) {
    if (binary) {
      const std::string bin = std::string(cs->name) + "_bin";
      if (const CollationInfo* co = FindCollation(bin)) return co->id;
    }
    return cs->default_collation;
  }
  if (binary) {
    const CharsetInfo& base = CharsetOfCollation(fallback == 0 ? kDefaultCollation : fallback);
    if (const CollationInfo* co = FindCollation(std::string(base.name) + "_bin")) return co->id;
  }
  return fallback == 0 ? kDefaultCollation : fallback;
}

// CHAR, BINARY, VARBINARY, the TEXT and BLOB kinds, ENUM and JSON; nullopt
// for other type names. MySQL's limits: CHAR/BINARY <= 255 (1074),
// VARBINARY <= 65535 and needs a length.
std::optional<Result<SqlType>> BindStringColumnType(const ast::ColumnDefinition& cd) {
  const std::string& n = cd.type_name;
  auto too_big = [&](uint32_t max) -> Result<SqlType> {
    return SqlError(ErrorCode::kTooBigFieldLength,
                    "Column length too big for column '{}' (max = {}); use BLOB or TEXT instead", cd.name, max);
  };
  auto with_charset = [&](SqlType t) -> Result<SqlType> {
    SHALE_RETURN_IF_ERROR(ApplyCharset(cd, &t));
    return t;
  };
  // TEXT(n) / BLOB(n): the smallest kind holding n characters (bytes).
  auto lob_for = [](uint64_t bytes) {
    if (bytes <= kTinyLobBytes) return kTinyLobBytes;
    if (bytes <= kLobBytes) return kLobBytes;
    if (bytes <= kMediumLobBytes) return kMediumLobBytes;
    return kLongLobBytes;
  };
  if (n == "CHAR" || n == "CHARACTER" || n == "NCHAR") {
    uint32_t len = cd.length.value_or(1);
    if (len > 255) return too_big(255);
    return with_charset(SqlType::Char(len));
  }
  if (n == "BINARY") {
    uint32_t len = cd.length.value_or(1);
    if (len > 255) return too_big(255);
    return with_charset(SqlType::Binary(len));
  }
  if (n == "VARBINARY") {
    if (!cd.length) {
      return SqlError(ErrorCode::kParse,
                      "You have an error in your SQL syntax; VARBINARY of column '{}' needs a length", cd.name);
    }
    if (*cd.length > 65535) return too_big(65535);
    return with_charset(SqlType::Varbinary(*cd.length));
  }
  if (n == "TINYTEXT") return with_charset(SqlType::Text(kTinyLobBytes));
  if (n == "TEXT") {
    return with_charset(SqlType::Text(cd.length ? lob_for(uint64_t{*cd.length} * 4) : kLobBytes));
  }
  if (n == "MEDIUMTEXT" || n == "LONG") return with_charset(SqlType::Text(kMediumLobBytes));
  if (n == "LONGTEXT") return with_charset(SqlType::Text(kLongLobBytes));
  if (n == "TINYBLOB") return with_charset(SqlType::Blob(kTinyLobBytes));
  if (n == "BLOB") return with_charset(SqlType::Blob(cd.length ? lob_for(*cd.length) : kLobBytes));
  if (n == "MEDIUMBLOB") return with_charset(SqlType::Blob(kMediumLobBytes));
  if (n == "LONGBLOB") return with_charset(SqlType::Blob(kLongLobBytes));
  if (n == "JSON") return with_charset(SqlType::Json());
  if (n == "ENUM") {
    SqlType t{TypeId::kEnum};
    SHALE_RETURN_IF_ERROR(ApplyCharset(cd, &t));
    if (t.is_binary_string()) return t;  // not reached: ENUM stays ENUM
    const uint16_t coll = t.Collation();
    for (const std::string& e : cd.elements) {
      std::string v = e;
      while (!v.empty() && v.back() == ' ') v.pop_back();  // MySQL drops trailing spaces
      for (const std::string& prior : t.elements) {
        if (CompareStrings(prior, v, coll) == 0) {
          return SqlError(ErrorCode::kDuplicatedValueInType, "Column '{}' has duplicated value '{}' in ENUM",
                          cd.name, e);
        }
      }
      t.elements.push_back(std::move(v));
    }
    return t;
  }
  if (n == "SET") {
    // SET('a', 'b', ...): at most 64 members (1097), none twice (1291),
    // none holding a comma.
    SqlType t{TypeId::kSet};
    SHALE_RETURN_IF_ERROR(ApplyCharset(cd, &t));
    const uint16_t coll = t.Collation();
    if (cd.elements.size() > 64) {
      return SqlError(ErrorCode::kTooBigSet, "Too many strings for column {} and SET", cd.name);
    }
    for (const std::string& e : cd.elements) {
      std::string v = e;
      while (!v.empty() && v.back() == ' ') v.pop_back();  // MySQL drops trailing spaces
      if (v.find(',') != std::string::npos) {
        return SqlError(ErrorCode::kIllegalValueForType, "Illegal set '{}' value found during parsing", e);
      }
      for (const std::string& prior : t.elements) {
        if (CompareStrings(prior, v, coll) == 0) {
          return SqlError(ErrorCode::kDuplicatedValueInType, "Column '{}' has duplicated value '{}' in SET",
                          cd.name, e);
        }
      }
      t.elements.push_back(std::move(v));
    }
    return t;
  }
  return std::nullopt;
}

// ---- CREATE TABLE -------------------------------------------------------------

// The table option COMPRESSION= (MySQL's page compression): 'zlib', 'zstd'
// (an extension: it compresses better and faster, docs/storage.md), or
// 'none'/'' for none, case-insensitive, stored as "", "zlib" or "zstd". Any
// other algorithm is ER_ILLEGAL_HA_CREATE_OPTION, as InnoDB reports it.
static Result<std::string> TableCompressionOption(const std::string& given) {
  std::string lower;
  for (char c : given) lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  if (lower.empty() || lower == "none") return std::string();
  if (lower == "zlib" || lower == "zstd") return lower;
  return SqlError(ErrorCode::kIllegalHaCreateOption,
                  "Table storage engine 'Shale' does not support the create option 'COMPRESSION'");
}

Result<BoundStatement> Binder::BindCreateTable(const ast::CreateTableStmt& s) {
  CreateTableCmd cmd;
  cmd.if_not_exists = s.if_not_exists;
  cmd.slices = s.slices.value_or(0);
  cmd.replicas = s.replicas.value_or(0);
  catalog::TableDef& def = cmd.def;
  SHALE_ASSIGN_OR_RETURN(def.db, ResolveDb(s.table.db));
  def.name = s.table.table;
  SHALE_RETURN_IF_ERROR(CheckTableName(def.name));
  SHALE_ASSIGN_OR_RETURN(def.compression, TableCompressionOption(s.compression));
  if (!ctx_.catalog->DatabaseExists(def.db)) {
    return SqlError(ErrorCode::kBadDb, "Unknown database '{}'", def.db);
  }
  if (s.like) {
    // The same columns, keys and slice count; no rows.
    SHALE_ASSIGN_OR_RETURN(auto like, ResolveTable(*s.like));
    def.columns = like->columns;
    def.compression = like->compression;
    def.primary.name = like->primary.name;
    def.primary.key_columns = like->primary.key_columns;
    def.primary.distribution_columns = like->primary.distribution_columns;
    for (catalog::RepresentationDef index : like->indexes) {
      index.slices.clear();
      def.indexes.push_back(std::move(index));
    }
    if (!s.slices) cmd.slices = static_cast<uint32_t>(like->primary.slices.size());
    if (!s.replicas) cmd.replicas = like->replicas;
    return BoundStatement(std::move(cmd));
  }
  if (s.as_select) {
    // The query's columns, with their types, NULL-able as the query says; a
    // hidden primary key; the rows are inserted after the table is made.
    Binder sub(ctx_);
    SHALE_ASSIGN_OR_RETURN(cmd.as_select, sub.BindSelect(*s.as_select));
    for (const ColumnInfo& c : cmd.as_select->columns) {
      if (def.FindColumn(c.name) >= 0) return SqlError(ErrorCode::kDupFieldName, "Duplicate column name '{}'", c.name);
      if (c.name.size() > 64) return SqlError(ErrorCode::kTooLongIdent, "Identifier name '{}' is too long", c.name);
      catalog::ColumnDef col;
      col.name = c.name;
      col.type = c.type.id == TypeId::kNull ? SqlType::BigInt() : c.type;
      col.nullable = c.nullable;
      def.columns.push_back(std::move(col));
    }
    catalog::ColumnDef row_id;
    row_id.name = std::string(catalog::kHiddenRowIdColumn);
    row_id.type = SqlType::BigInt();
    row_id.nullable = false;
    row_id.hidden = true;
    def.columns.push_back(std::move(row_id));
    def.primary.name = "PRIMARY";
    def.primary.key_columns = {static_cast<int>(def.columns.size() - 1)};
    def.primary.distribution_columns = 1;
    return BoundStatement(std::move(cmd));
  }
  if (s.columns.empty()) {
    return SqlError(ErrorCode::kTableMustHaveColumns, "A table must have at least 1 column");
  }
  std::vector<std::string> pk = s.primary_key;
  // CHARSET= / COLLATE= table options: the collation of text columns that
  // name none.
  uint16_t table_collation = 0;
  if (!s.charset.empty() || !s.collation.empty()) {
    SHALE_ASSIGN_OR_RETURN(table_collation, ResolveCollation(s.charset, s.collation, false, 0));
  }
  for (const ast::ColumnDefinition& cd : s.columns) {
    if (cd.name.size() > 64) return SqlError(ErrorCode::kTooLongIdent, "Identifier name '{}' is too long", cd.name);
    if (def.FindColumn(cd.name) >= 0) {
      return SqlError(ErrorCode::kDupFieldName, "Duplicate column name '{}'", cd.name);
    }
    catalog::ColumnDef c;
    c.name = cd.name;
    SHALE_ASSIGN_OR_RETURN(c.type, BindColumnType(cd));
    if (table_collation != 0 && cd.charset.empty() && cd.collation.empty() && c.type.is_string() &&
        !c.type.is_binary_string()) {
      SHALE_RETURN_IF_ERROR(ApplyCharset(cd, &c.type, table_collation));
    }
    c.nullable = !cd.not_null;
    if (cd.primary_key) {
      if (!pk.empty()) return SqlError(ErrorCode::kMultiplePriKey, "Multiple primary key defined");
      pk.push_back(cd.name);
    }
    int now_fsp = 0;
    const bool datetime_column = c.type.id == TypeId::kDatetime || c.type.id == TypeId::kTimestamp;
    if (cd.on_update) {
      if (!datetime_column || !IsCurrentTimestamp(*cd.on_update, &now_fsp)) {
        return SqlError(ErrorCode::kInvalidOnUpdate, "Invalid ON UPDATE clause for '{}' column", cd.name);
      }
      c.on_update_now = true;
    }
    if (cd.default_value && IsCurrentTimestamp(*cd.default_value, &now_fsp)) {
      if (!c.type.is_temporal()) {
        return SqlError(ErrorCode::kInvalidDefault, "Invalid default value for '{}'", cd.name);
      }
      c.default_now = true;
    } else if (cd.default_value) {
      // DEFAULT 0x10 of a numeric column is 16, as a hex literal stored
      // into it.
      auto v = IsHexLiteral(*cd.default_value) && ComparesAsNumber(c.type)
                   ? Result<Value>(HexLiteralNumber(*cd.default_value)->constant)
                   : EvaluateConstant(*cd.default_value);
      if (!v.ok()) return SqlError(ErrorCode::kInvalidDefault, "Invalid default value for '{}'", cd.name);
      // MySQL 5.7/8.0: no literal default for BLOB, TEXT and JSON (MariaDB
      // allows one; Shale follows MySQL).
      if (c.type.is_lob() && !v->is_null()) {
        return SqlError(ErrorCode::kBlobCantHaveDefault,
                        "BLOB, TEXT, GEOMETRY or JSON column '{}' can't have a default value", cd.name);
      }
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
    // No primary key: the rows are keyed by a hidden row id.
    if (def.FindColumn(catalog::kHiddenRowIdColumn) >= 0) {
      return SqlError(ErrorCode::kDupFieldName, "Duplicate column name '{}'",
                      catalog::kHiddenRowIdColumn);
    }
    catalog::ColumnDef row_id;
    row_id.name = std::string(catalog::kHiddenRowIdColumn);
    row_id.type = SqlType::BigInt();
    row_id.nullable = false;
    row_id.hidden = true;
    def.columns.push_back(std::move(row_id));
    pk.push_back(std::string(catalog::kHiddenRowIdColumn));
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
    if (c.type.is_lob()) {
      return SqlError(ErrorCode::kBlobKeyWithoutLength,
                      "BLOB/TEXT column '{}' used in key specification without a key length", c.name);
    }
    if (c.default_value && c.default_value->is_null()) {
      return SqlError(ErrorCode::kInvalidDefault, "Invalid default value for '{}'", c.name);
    }
    c.nullable = false;  // primary key columns are NOT NULL
    def.primary.key_columns.push_back(idx);
  }
  def.primary.name = "PRIMARY";
  def.primary.distribution_columns = 1;
  std::vector<ast::IndexDefinition> indexes;
  for (const ast::ColumnDefinition& cd : s.columns) {
    if (cd.unique) indexes.push_back({"", {cd.name}, true});
  }
  indexes.insert(indexes.end(), s.indexes.begin(), s.indexes.end());
  SHALE_RETURN_IF_ERROR(ResolveIndexes(def, indexes, &def.indexes));
  SHALE_RETURN_IF_ERROR(BindAutoIncrementColumns(s, &def));
  if (s.auto_increment) cmd.auto_increment = static_cast<int64_t>(std::min<uint64_t>(*s.auto_increment, INT64_MAX));
  return BoundStatement(std::move(cmd));
}

// ---- SET ----------------------------------------------------------------------

Result<BoundStatement> Binder::BindSet(const ast::SetStmt& s) {
  SetCmd cmd;
  // SET @name = expr: the values are computed by a one-row query, so
  // subqueries work as in SELECT.
  ast::SelectStmt user_values;
  for (const ast::SetAssignment& a : s.assignments) {
    if (a.scope != "user") continue;
    ast::SelectItem item;
    item.expr = CloneAst(*a.value);
    user_values.items.push_back(std::move(item));
    cmd.user_variables.push_back(a.name);
  }
  if (!cmd.user_variables.empty()) {
    SHALE_ASSIGN_OR_RETURN(cmd.user_values, BindSelect(user_values));
  }
  for (const ast::SetAssignment& a : s.assignments) {
    if (a.scope == "user") continue;
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
    if (a.scope == "next") {
      cmd.next_transaction.emplace_back(a.name, std::move(v));
    } else if (a.scope == "global") {
      cmd.global_assignments.emplace_back(a.name, std::move(v));
    } else {
      cmd.assignments.emplace_back(a.name, std::move(v));
    }
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
      if (like_ok(std::string(kInformationSchema))) rows.push_back({Value::String(std::string(kInformationSchema))});
      for (const std::string& db : ctx_.catalog->ListDatabases()) {
        if (like_ok(db)) rows.push_back({Value::String(db)});
      }
      std::string name = s.like ? fmt::format("Database ({})", *s.like) : "Database";
      return ValuesPlan({TextColumn(name)}, rows);
    }
    case Kind::kTables: {
      SHALE_ASSIGN_OR_RETURN(std::string db, ResolveDb(s.db));
      const bool virtual_db = IsInformationSchema(db);
      std::vector<std::string> tables;
      if (virtual_db) {
        db = std::string(kInformationSchema);
        tables = InformationSchemaTables();
      } else {
        SHALE_ASSIGN_OR_RETURN(tables, ctx_.catalog->ListTables(db));
      }
      for (const std::string& t : tables) {
        if (!like_ok(t)) continue;
        if (s.full) {
          rows.push_back({Value::String(t), Value::String(virtual_db ? "SYSTEM VIEW" : "BASE TABLE")});
        } else {
          rows.push_back({Value::String(t)});
        }
      }
      std::vector<ColumnInfo> cols = {TextColumn("Tables_in_" + db)};
      if (s.full) cols.push_back(TextColumn("Table_type"));
      return ValuesPlan(std::move(cols), rows);
    }
    case Kind::kVariables: {
      const auto* vars = s.global && ctx_.global_variables ? ctx_.global_variables : ctx_.variables;
      std::string pattern = s.like ? *s.like : "";
      for (char& ch : pattern) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      // Boolean variables show as ON/OFF (SELECT @@x gives 1/0), as MySQL.
      static const std::set<std::string> kBoolean = {"autocommit",    "foreign_key_checks",    "local_infile",
                                                     "performance_schema", "transaction_read_only", "tx_read_only",
                                                     "unique_checks"};
      for (const auto& [name, value] : *vars) {
        if (s.like && !MatchLike(name, pattern)) continue;
        std::string text = value.is_null() ? "" : value.ToText();
        if (kBoolean.count(name) && value.is_int()) text = value.as_int() != 0 ? "ON" : "OFF";
        rows.push_back({Value::String(name), Value::String(std::move(text))});
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
      if (IsInformationSchema(s.table.db.empty() ? ctx_.current_db : s.table.db)) {
        SHALE_ASSIGN_OR_RETURN(VirtualTable vt,
                               InformationSchemaTable(s.table.table, *ctx_.catalog, ctx_.info_schema));
        for (const ColumnInfo& c : vt.columns) {
          if (!like_ok(c.name)) continue;
          rows.push_back({Value::String(c.name), Value::String(c.type.ToString()),
                          Value::String(c.nullable ? "YES" : "NO"), Value::String(""), Value::Null(),
                          Value::String("")});
        }
        ColumnInfo def_col = TextColumn("Default");
        def_col.nullable = true;
        return ValuesPlan({TextColumn("Field"), TextColumn("Type"), TextColumn("Null", 3), TextColumn("Key", 3),
                           def_col, TextColumn("Extra")},
                          rows);
      }
      SHALE_ASSIGN_OR_RETURN(auto table, ResolveTable(s.table));
      // Without a declared primary key, MySQL shows the first UNIQUE index
      // over NOT NULL columns as the primary key.
      std::vector<int> pk_columns = table->primary.key_columns;
      if (table->columns[pk_columns[0]].hidden) {
        for (const catalog::RepresentationDef& index : table->indexes) {
          bool not_null = index.unique;
          for (int k : index.key_columns) not_null &= !table->columns[k].nullable;
          if (not_null) {
            pk_columns = index.key_columns;
            break;
          }
        }
      }
      for (size_t i = 0; i < table->columns.size(); ++i) {
        const catalog::ColumnDef& c = table->columns[i];
        if (c.hidden || !like_ok(c.name)) continue;
        bool is_pk = std::find(pk_columns.begin(), pk_columns.end(), static_cast<int>(i)) != pk_columns.end();
        Value def = c.default_value && !c.default_value->is_null() ? Value::String(c.default_value->ToText())
                                                                   : Value::Null();
        if (c.default_now) def = Value::String(CurrentTimestampSql(c.type));
        std::string extra = c.on_update_now ? "on update " + CurrentTimestampSql(c.type) : "";
        if (c.auto_increment) extra = "auto_increment";
        // MySQL's Key, by priority: PRI; UNI for the column of a one-column
        // UNIQUE index; MUL for the first column of any other index.
        std::string key = is_pk ? "PRI" : "";
        for (const catalog::RepresentationDef& index : table->indexes) {
          if (key == "PRI" || key == "UNI" || index.key_columns[0] != static_cast<int>(i)) continue;
          key = index.unique && index.key_columns.size() == 1 ? "UNI" : "MUL";
        }
        if (s.full) {
          // SHOW FULL COLUMNS adds Collation (NULL for non-text columns),
          // Privileges and Comment.
          Value collation = c.type.is_string() && !c.type.is_binary_string() && c.type.id != TypeId::kJson
                                ? Value::String(CollationById(c.type.Collation()).name)
                                : Value::Null();
          rows.push_back({Value::String(c.name), Value::String(ColumnTypeSql(c)), collation,
                          Value::String(c.nullable ? "YES" : "NO"), Value::String(key), def, Value::String(""),
                          Value::String("select,insert,update,references"), Value::String("")});
          continue;
        }
        rows.push_back({Value::String(c.name), Value::String(ColumnTypeSql(c)),
                        Value::String(c.nullable ? "YES" : "NO"), Value::String(key),
                        def, Value::String(extra)});
      }
      ColumnInfo def_col = TextColumn("Default");
      def_col.nullable = true;
      if (s.full) {
        ColumnInfo coll_col = TextColumn("Collation");
        coll_col.nullable = true;
        return ValuesPlan({TextColumn("Field"), TextColumn("Type"), coll_col, TextColumn("Null", 3),
                           TextColumn("Key", 3), def_col, TextColumn("Extra"), TextColumn("Privileges"),
                           TextColumn("Comment")},
                          rows);
      }
      return ValuesPlan({TextColumn("Field"), TextColumn("Type"), TextColumn("Null", 3),
                         TextColumn("Key", 3), def_col, TextColumn("Extra")},
                        rows);
    }
    case Kind::kCharset: {
      for (const CharsetInfo& cs : AllCharsets()) {
        if (!like_ok(cs.name)) continue;
        rows.push_back({Value::String(cs.name), Value::String(cs.description),
                        Value::String(CollationById(cs.default_collation).name), Value::Int(cs.maxlen)});
      }
      ColumnInfo maxlen;
      maxlen.name = "Maxlen";
      maxlen.type = SqlType::BigInt();
      maxlen.nullable = false;
      return ValuesPlan({TextColumn("Charset", 32), TextColumn("Description", 60),
                         TextColumn("Default collation", 64), maxlen},
                        rows);
    }
    case Kind::kCollation: {
      for (const CollationInfo& co : AllCollations()) {
        if (!like_ok(co.name)) continue;
        rows.push_back({Value::String(co.name), Value::String(co.charset), Value::Int(co.id),
                        Value::String(co.is_default ? "Yes" : ""), Value::String("Yes"), Value::Int(co.sortlen)});
      }
      auto int_col = [](const char* name) {
        ColumnInfo c;
        c.name = name;
        c.type = SqlType::BigInt();
        c.nullable = false;
        return c;
      };
      return ValuesPlan({TextColumn("Collation", 64), TextColumn("Charset", 32), int_col("Id"),
                         TextColumn("Default", 3), TextColumn("Compiled", 3), int_col("Sortlen")},
                        rows);
    }
    case Kind::kIndex: {
      // MySQL 8's SHOW INDEX columns; Cardinality is not estimated yet (NULL).
      SHALE_ASSIGN_OR_RETURN(auto table, ResolveTable(s.table));
      auto add = [&](const catalog::RepresentationDef& rep, bool unique) {
        for (size_t i = 0; i < rep.key_columns.size(); ++i) {
          const catalog::ColumnDef& c = table->columns[rep.key_columns[i]];
          rows.push_back({Value::String(table->name), Value::Int(unique ? 0 : 1), Value::String(rep.name),
                          Value::Int(static_cast<int64_t>(i + 1)), Value::String(c.name), Value::String("A"),
                          Value::Null(), Value::Null(), Value::Null(), Value::String(c.nullable ? "YES" : ""),
                          Value::String("BTREE"), Value::String(""), Value::String(""), Value::String("YES"),
                          Value::Null()});
        }
      };
      if (!table->columns[table->primary.key_columns[0]].hidden) add(table->primary, true);
      for (const catalog::RepresentationDef& index : table->indexes) add(index, index.unique);
      auto int_col = [](const char* name, bool nullable) {
        ColumnInfo c;
        c.name = name;
        c.type = SqlType::BigInt();
        c.nullable = nullable;
        return c;
      };
      auto null_text = [](const char* name) {
        ColumnInfo c = TextColumn(name);
        c.nullable = true;
        return c;
      };
      return ValuesPlan({TextColumn("Table"), int_col("Non_unique", false), TextColumn("Key_name"),
                         int_col("Seq_in_index", false), TextColumn("Column_name"), TextColumn("Collation", 1),
                         int_col("Cardinality", true), int_col("Sub_part", true), null_text("Packed"),
                         TextColumn("Null", 3), TextColumn("Index_type", 16), TextColumn("Comment", 16),
                         TextColumn("Index_comment", 1024), TextColumn("Visible", 3), null_text("Expression")},
                        rows);
    }
    case Kind::kTableStatus: {
      SHALE_ASSIGN_OR_RETURN(std::string db, ResolveDb(s.db));
      if (!IsInformationSchema(db) && !ctx_.catalog->DatabaseExists(db)) {
        return SqlError(ErrorCode::kBadDb, "Unknown database '{}'", db);
      }
      VirtualTable status = TableStatus(db, *ctx_.catalog, ctx_.info_schema);
      for (auto& row : status.rows) {
        if (like_ok(row[0].as_string())) rows.push_back(std::move(row));
      }
      return ValuesPlan(std::move(status.columns), rows);
    }
    case Kind::kCreateDatabase: {
      if (!IsInformationSchema(s.db) && !ctx_.catalog->DatabaseExists(s.db)) {
        return SqlError(ErrorCode::kBadDb, "Unknown database '{}'", s.db);
      }
      std::string name = IsInformationSchema(s.db) ? std::string(kInformationSchema) : s.db;
      rows.push_back({Value::String(name), Value::String(ShowCreateDatabaseSql(name, s.if_not_exists, ctx_.info_schema))});
      return ValuesPlan({TextColumn("Database"), TextColumn("Create Database", 1024)}, rows);
    }
    case Kind::kEngines: {
      SHALE_ASSIGN_OR_RETURN(VirtualTable engines,
                             InformationSchemaTable("ENGINES", *ctx_.catalog, ctx_.info_schema));
      std::vector<ColumnInfo> cols;
      for (const char* name : {"Engine", "Support", "Comment", "Transactions", "XA", "Savepoints"}) {
        ColumnInfo c = engines.columns[cols.size()];
        c.name = name;
        c.org_name.clear();
        c.table.clear();
        c.org_table.clear();
        c.db.clear();
        cols.push_back(std::move(c));
      }
      return ValuesPlan(std::move(cols), engines.rows);
    }
    case Kind::kCreateTable: {
      SHALE_ASSIGN_OR_RETURN(auto table, ResolveTable(s.table));
      int64_t next_auto_increment = 0;
      if (table->AutoIncrementColumn() >= 0) {
        auto next = ctx_.catalog->PeekNextId(table->id, catalog::IdCounter::kAutoIncrement);
        if (next.ok()) next_auto_increment = *next;
      }
      rows.push_back({Value::String(table->name), Value::String(ShowCreateTableSql(*table, next_auto_increment))});
      return ValuesPlan({TextColumn("Table"), TextColumn("Create Table", 4096)}, rows);
    }
  }
  return Status::Internal("unknown SHOW");
}

}  // namespace

Result<BoundStatement> Bind(const ast::Statement& stmt, const BindContext& ctx) {
  profile::ModuleScope profile_scope(profile::Module::kBind);
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

// MariaDB's text of CURRENT_TIMESTAMP with a column's fsp.
std::string CurrentTimestampSql(const SqlType& t) {
  return t.scale ? fmt::format("current_timestamp({})", t.scale) : "current_timestamp()";
}

std::string ColumnTypeSql(const catalog::ColumnDef& c) {
  return c.type.ToString();
}

Status ResolveIndexes(const catalog::TableDef& table, const std::vector<ast::IndexDefinition>& defs,
                      std::vector<catalog::RepresentationDef>* out) {
  auto taken = [&](const std::string& name) {
    if (EqualsIgnoreCase(name, "PRIMARY")) return true;
    for (const auto& r : *out) {
      if (EqualsIgnoreCase(r.name, name)) return true;
    }
    return false;
  };
  for (const ast::IndexDefinition& d : defs) {
    catalog::RepresentationDef rep;
    rep.unique = d.unique;
    rep.distribution_columns = 1;
    for (size_t k = 0; k < d.columns.size(); ++k) {
      const std::string& col = d.columns[k];
      int idx = table.FindColumn(col);
      if (idx >= 0 && table.columns[idx].hidden) idx = -1;
      if (idx < 0) {
        return SqlError(ErrorCode::kKeyColumnDoesNotExist, "Key column '{}' doesn't exist in table", col);
      }
      // BLOB/TEXT keys need a prefix length (1170); a prefix needs a string
      // column no shorter than it (1089). The whole value is indexed.
      const SqlType& type = table.columns[idx].type;
      const uint32_t prefix = k < d.prefix_lengths.size() ? d.prefix_lengths[k] : 0;
      if (prefix == 0 && type.is_lob()) {
        return SqlError(ErrorCode::kBlobKeyWithoutLength,
                        "BLOB/TEXT column '{}' used in key specification without a key length", col);
      }
      if (prefix != 0 && (!type.is_string() || type.id == TypeId::kEnum || type.id == TypeId::kSet ||
                          type.id == TypeId::kJson ||
                          (!type.is_lob() && prefix > type.length))) {
        return SqlError(ErrorCode::kWrongSubKey,
                        "Incorrect prefix key; the used key part isn't a string, the used length is longer "
                        "than the key part, or the storage engine doesn't support unique prefix keys");
      }
      if (std::find(rep.key_columns.begin(), rep.key_columns.end(), idx) != rep.key_columns.end()) {
        return SqlError(ErrorCode::kDupFieldName, "Duplicate column name '{}'", col);
      }
      rep.key_columns.push_back(idx);
    }
    if (d.name.empty()) {
      std::string base = table.columns[rep.key_columns[0]].name;
      rep.name = base;
      for (int n = 2; taken(rep.name); ++n) rep.name = fmt::format("{}_{}", base, n);
    } else {
      if (d.name.size() > 64) return SqlError(ErrorCode::kTooLongIdent, "Identifier name '{}' is too long", d.name);
      if (taken(d.name)) return SqlError(ErrorCode::kDupKeyName, "Duplicate key name '{}'", d.name);
      rep.name = d.name;
    }
    out->push_back(std::move(rep));
  }
  return Status::OK();
}

std::string ShowCreateDatabaseSql(const std::string& db, bool if_not_exists, const InfoSchemaSource& source) {
  bool is = IsInformationSchema(db);
  return fmt::format("CREATE DATABASE {}`{}` /*!40100 DEFAULT CHARACTER SET {} COLLATE {} */",
                     if_not_exists ? "/*!32312 IF NOT EXISTS*/ " : "", db, is ? "utf8mb3" : source.charset,
                     is ? "utf8mb3_general_ci" : source.collation);
}

std::string ShowCreateTableSql(const catalog::TableDef& t, int64_t auto_increment) {
  std::string out = fmt::format("CREATE TABLE `{}` (\n", t.name);
  std::vector<std::string> lines;
  for (const catalog::ColumnDef& c : t.columns) {
    if (c.hidden) continue;
    std::string line = fmt::format("  `{}` {}", c.name, ColumnTypeSql(c));
    if (c.type.is_string() && c.type.collation != 0 && !c.type.is_binary_string()) {
      const CollationInfo& co = CollationById(c.type.Collation());
      line += fmt::format(" CHARACTER SET {} COLLATE {}", co.charset, co.name);
    }
    if (!c.nullable) line += " NOT NULL";
    if (c.nullable && c.type.id == TypeId::kTimestamp) line += " NULL";
    if (c.default_now) {
      line += " DEFAULT " + CurrentTimestampSql(c.type);
    } else if (c.default_value) {
      line += c.default_value->is_null() ? " DEFAULT NULL"
                                         : fmt::format(" DEFAULT '{}'", c.default_value->ToText());
    } else if (c.nullable) {
      line += " DEFAULT NULL";
    }
    if (c.on_update_now) line += " ON UPDATE " + CurrentTimestampSql(c.type);
    if (c.auto_increment) line += " AUTO_INCREMENT";
    lines.push_back(std::move(line));
  }
  bool hidden_key = false;
  std::string keys;
  for (size_t i = 0; i < t.primary.key_columns.size(); ++i) {
    const catalog::ColumnDef& c = t.columns[t.primary.key_columns[i]];
    hidden_key |= c.hidden;
    keys += fmt::format("{}`{}`", i ? "," : "", c.name);
  }
  if (!hidden_key) lines.push_back(fmt::format("  PRIMARY KEY ({})", keys));
  for (const catalog::RepresentationDef& index : t.indexes) {
    std::string cols;
    for (size_t i = 0; i < index.key_columns.size(); ++i) {
      cols += fmt::format("{}`{}`", i ? "," : "", t.columns[index.key_columns[i]].name);
    }
    lines.push_back(fmt::format("  {}KEY `{}` ({})", index.unique ? "UNIQUE " : "", index.name, cols));
  }
  for (size_t i = 0; i < lines.size(); ++i) out += lines[i] + (i + 1 < lines.size() ? ",\n" : "\n");
  out += ")";
  if (auto_increment > 1) out += fmt::format(" AUTO_INCREMENT={}", auto_increment);
  out += fmt::format(" SLICES={}", t.primary.slices.size());
  if (t.replicas != 0) out += fmt::format(" REPLICAS={}", t.replicas);
  if (!t.compression.empty()) out += fmt::format(" COMPRESSION='{}'", t.compression);
  return out;
}

Status BindAutoIncrementColumns(const ast::CreateTableStmt& s, catalog::TableDef* def) {
  int auto_column = -1;
  for (const ast::ColumnDefinition& cd : s.columns) {
    if (!cd.auto_increment) continue;
    const int i = def->FindColumn(cd.name);
    if (auto_column >= 0) {
      return SqlError(ErrorCode::kWrongAutoKey,
                      "Incorrect table definition; there can be only one auto column and it must be defined as a key");
    }
    catalog::ColumnDef& c = def->columns[i];
    // Integer types only (MySQL 8 deprecates FLOAT/DOUBLE AUTO_INCREMENT;
    // MariaDB still takes them).
    if (!c.type.is_integer() || c.type.id == TypeId::kYear) {
      return SqlError(ErrorCode::kWrongFieldSpec, "Incorrect column specifier for column '{}'", c.name);
    }
    if (c.default_value || c.default_now) {
      return SqlError(ErrorCode::kInvalidDefault, "Invalid default value for '{}'", c.name);
    }
    c.auto_increment = true;
    c.nullable = false;
    auto_column = i;
  }
  if (auto_column < 0) return Status::OK();
  bool keyed = def->primary.key_columns[0] == auto_column;
  for (const catalog::RepresentationDef& index : def->indexes) keyed |= index.key_columns[0] == auto_column;
  if (!keyed) {
    return SqlError(ErrorCode::kWrongAutoKey,
                    "Incorrect table definition; there can be only one auto column and it must be defined as a key");
  }
  return Status::OK();
}

}  // namespace shale::sql

#include "sierra/logical.h"

#include <fmt/format.h>

#include <set>

namespace shale::sierra {
namespace {

LogicalPtr Make(LogicalKind kind) {
  auto op = std::make_unique<LogicalOperator>();
  op->kind = kind;
  return op;
}

void Print(const LogicalOperator& op, int depth, std::string* out) {
  out->append(static_cast<size_t>(depth) * 2, ' ');
  out->append(op.Describe());
  out->push_back('\n');
  for (const auto& c : op.children) Print(*c, depth + 1, out);
}

}  // namespace

LogicalPtr LogicalOperator::Values(std::vector<ColumnInfo> columns,
                                   std::vector<std::vector<ExprPtr>> rows) {
  auto op = Make(LogicalKind::kValues);
  op->columns = std::move(columns);
  op->rows = std::move(rows);
  return op;
}

LogicalPtr LogicalOperator::ValueRows(std::vector<ColumnInfo> columns,
                                      std::shared_ptr<const std::vector<std::vector<Value>>> rows) {
  auto op = Make(LogicalKind::kValues);
  op->columns = std::move(columns);
  op->value_rows = std::move(rows);
  return op;
}

LogicalPtr LogicalOperator::Scan(std::shared_ptr<const catalog::TableDef> table,
                                 const std::string& alias) {
  auto op = Make(LogicalKind::kScan);
  for (size_t i = 0; i < table->columns.size(); ++i) {
    const catalog::ColumnDef& c = table->columns[i];
    ColumnInfo info;
    info.name = c.name;
    info.org_name = c.name;
    info.table = alias.empty() ? table->name : alias;
    info.org_table = table->name;
    info.db = table->db;
    info.type = c.type;
    info.nullable = c.nullable;
    info.hidden = c.hidden;
    for (int k : table->primary.key_columns) info.primary_key |= (k == static_cast<int>(i));
    op->columns.push_back(std::move(info));
  }
  op->table = std::move(table);
  return op;
}

LogicalPtr LogicalOperator::Filter(LogicalPtr child, ExprPtr predicate) {
  auto op = Make(LogicalKind::kFilter);
  op->columns = child->columns;
  op->predicate = std::move(predicate);
  op->children.push_back(std::move(child));
  return op;
}

LogicalPtr LogicalOperator::Project(LogicalPtr child, std::vector<ExprPtr> exprs,
                                    std::vector<ColumnInfo> columns) {
  auto op = Make(LogicalKind::kProject);
  op->columns = std::move(columns);
  op->exprs = std::move(exprs);
  op->children.push_back(std::move(child));
  return op;
}

LogicalPtr LogicalOperator::Sort(LogicalPtr child, std::vector<SortKey> keys) {
  auto op = Make(LogicalKind::kSort);
  op->columns = child->columns;
  op->sort_keys = std::move(keys);
  op->children.push_back(std::move(child));
  return op;
}

LogicalPtr LogicalOperator::Distinct(LogicalPtr child) {
  auto op = Make(LogicalKind::kDistinct);
  op->columns = child->columns;
  op->children.push_back(std::move(child));
  return op;
}

LogicalPtr LogicalOperator::Limit(LogicalPtr child, uint64_t limit, uint64_t offset) {
  auto op = Make(LogicalKind::kLimit);
  op->columns = child->columns;
  op->limit = limit;
  op->offset = offset;
  op->children.push_back(std::move(child));
  return op;
}

LogicalPtr LogicalOperator::Insert(std::shared_ptr<const catalog::TableDef> table,
                                   LogicalPtr child) {
  auto op = Make(LogicalKind::kInsert);
  op->table = std::move(table);
  op->children.push_back(std::move(child));
  return op;
}

LogicalPtr LogicalOperator::Update(std::shared_ptr<const catalog::TableDef> table, LogicalPtr child,
                                   std::vector<int> columns, std::vector<ExprPtr> exprs) {
  auto op = Make(LogicalKind::kUpdate);
  op->table = std::move(table);
  op->update_columns = std::move(columns);
  op->exprs = std::move(exprs);
  op->children.push_back(std::move(child));
  return op;
}

LogicalPtr LogicalOperator::Delete(std::shared_ptr<const catalog::TableDef> table,
                                   LogicalPtr child) {
  auto op = Make(LogicalKind::kDelete);
  op->table = std::move(table);
  op->children.push_back(std::move(child));
  return op;
}

LogicalPtr LogicalOperator::Aggregate(LogicalPtr child, std::vector<ExprPtr> group_by,
                                      std::vector<AggregateCall> aggregates,
                                      std::vector<ColumnInfo> columns) {
  auto op = Make(LogicalKind::kAggregate);
  op->columns = std::move(columns);
  op->group_by = std::move(group_by);
  op->aggregates = std::move(aggregates);
  op->children.push_back(std::move(child));
  return op;
}

LogicalPtr LogicalOperator::Join(JoinKind kind, LogicalPtr left, LogicalPtr right,
                                 ExprPtr predicate) {
  auto op = Make(LogicalKind::kJoin);
  op->join_kind = kind;
  op->columns = left->columns;
  for (ColumnInfo c : right->columns) {
    if (kind == JoinKind::kLeft) c.nullable = true;
    op->columns.push_back(std::move(c));
  }
  op->predicate = std::move(predicate);
  op->children.push_back(std::move(left));
  op->children.push_back(std::move(right));
  return op;
}

std::string DescribeAggregate(const std::vector<ExprPtr>& group_by,
                              const std::vector<AggregateCall>& aggregates) {
  std::string groups, aggs;
  for (size_t i = 0; i < group_by.size(); ++i) groups += (i ? ", " : "") + group_by[i]->ToString();
  for (size_t i = 0; i < aggregates.size(); ++i) aggs += (i ? ", " : "") + aggregates[i].ToString();
  return fmt::format("Aggregate group=[{}] aggregates=[{}]", groups, aggs);
}

std::string DescribeJoin(JoinKind kind, const ExprPtr& predicate) {
  return fmt::format("{}Join{}", kind == JoinKind::kLeft ? "Left" : "",
                     predicate ? " on " + predicate->ToString() : "");
}

std::string DescribeAssignments(const catalog::TableDef& table, const std::vector<int>& columns,
                                const std::vector<ExprPtr>& exprs) {
  std::string list;
  for (size_t i = 0; i < exprs.size() && i < columns.size(); ++i) {
    if (i) list += ", ";
    list += fmt::format("{} = {}", table.columns[columns[i]].name, exprs[i]->ToString());
  }
  return list;
}

std::string LogicalOperator::Describe() const {
  switch (kind) {
    case LogicalKind::kValues:
      return fmt::format("Values rows={} columns={}", values_count(), columns.size());
    case LogicalKind::kScan:
      return fmt::format("Scan {}.{}", table->db, table->name);
    case LogicalKind::kFilter:
      return fmt::format("Filter {}", predicate->ToString());
    case LogicalKind::kProject: {
      std::string list;
      for (size_t i = 0; i < exprs.size(); ++i) {
        if (i) list += ", ";
        list += exprs[i]->ToString();
      }
      return fmt::format("Project {}", list);
    }
    case LogicalKind::kSort: {
      std::string list;
      for (size_t i = 0; i < sort_keys.size(); ++i) {
        if (i) list += ", ";
        list += sort_keys[i].expr->ToString() + (sort_keys[i].desc ? " DESC" : " ASC");
      }
      return fmt::format("Sort {}", list);
    }
    case LogicalKind::kDistinct:
      return "Distinct";
    case LogicalKind::kLimit:
      return fmt::format("Limit {} offset {}", limit, offset);
    case LogicalKind::kInsert:
      return fmt::format("Insert {}.{}", table->db, table->name);
    case LogicalKind::kUpdate:
      return fmt::format("Update {}.{} set {}", table->db, table->name,
                         DescribeAssignments(*table, update_columns, exprs));
    case LogicalKind::kDelete:
      return fmt::format("Delete {}.{}", table->db, table->name);
    case LogicalKind::kAggregate:
      return DescribeAggregate(group_by, aggregates);
    case LogicalKind::kJoin:
      return DescribeJoin(join_kind, predicate);
    case LogicalKind::kApply:
      return DescribeApply(apply_kind, correlated, compare_op, exprs);
    case LogicalKind::kUnion:
      return fmt::format("UnionAll terms={}", children.size());
  }
  return "?";
}

std::string DescribeApply(ApplyKind kind, bool correlated, CompareOp op, const std::vector<ExprPtr>& exprs) {
  static constexpr const char* kKinds[] = {"scalar", "exists", "in", "any", "all"};
  static constexpr const char* kOps[] = {"=", "<>", "<", "<=", ">", ">=", "<=>"};
  std::string out = fmt::format("Apply {}{}", kKinds[static_cast<int>(kind)], correlated ? " correlated" : "");
  if (!exprs.empty()) {
    out += fmt::format(" {}", exprs[0]->ToString());
    if (kind == ApplyKind::kAny || kind == ApplyKind::kAll) out += fmt::format(" {}", kOps[static_cast<int>(op)]);
  }
  return out;
}

LogicalPtr LogicalOperator::Apply(ApplyKind kind, LogicalPtr input, LogicalPtr subquery, ExprPtr lhs,
                                  CompareOp op, bool correlated, ColumnInfo column) {
  auto out = Make(LogicalKind::kApply);
  out->apply_kind = kind;
  out->compare_op = op;
  out->correlated = correlated;
  if (lhs) out->exprs.push_back(std::move(lhs));
  out->columns = input->columns;
  out->columns.push_back(std::move(column));
  out->children.push_back(std::move(input));
  out->children.push_back(std::move(subquery));
  return out;
}

LogicalPtr LogicalOperator::Union(std::vector<LogicalPtr> terms, std::vector<ColumnInfo> columns) {
  auto out = Make(LogicalKind::kUnion);
  out->columns = std::move(columns);
  out->children = std::move(terms);
  return out;
}

namespace {

// Copies `op` with `rewrite` applied to every expression it holds (not to
// those of its children); `rewrite` may be null.
template <typename F>
LogicalPtr CopyOperator(const LogicalOperator& op, const F& rewrite) {
  auto out = std::make_unique<LogicalOperator>();
  out->kind = op.kind;
  out->columns = op.columns;
  out->table = op.table;
  out->join_kind = op.join_kind;
  out->update_columns = op.update_columns;
  out->limit = op.limit;
  out->offset = op.offset;
  out->apply_kind = op.apply_kind;
  out->insert_conflict = op.insert_conflict;
  out->correlated = op.correlated;
  out->compare_op = op.compare_op;
  for (const auto& row : op.rows) {
    std::vector<ExprPtr> r;
    for (const ExprPtr& e : row) r.push_back(rewrite(e));
    out->rows.push_back(std::move(r));
  }
  out->value_rows = op.value_rows;
  out->predicate = op.predicate ? rewrite(op.predicate) : nullptr;
  for (const ExprPtr& e : op.group_by) out->group_by.push_back(rewrite(e));
  for (AggregateCall call : op.aggregates) {
    if (call.arg) call.arg = rewrite(call.arg);
    for (ExprPtr& e : call.more_args) e = rewrite(e);
    for (AggregateOrder& o : call.order_by) o.expr = rewrite(o.expr);
    out->aggregates.push_back(std::move(call));
  }
  for (const ExprPtr& e : op.exprs) out->exprs.push_back(rewrite(e));
  for (SortKey k : op.sort_keys) {
    k.expr = rewrite(k.expr);
    out->sort_keys.push_back(std::move(k));
  }
  return out;
}

bool ExprHasOuterRef(const Expr& e) {
  if (IsOuterRef(e)) return true;
  for (const ExprPtr& c : e.children) {
    if (ExprHasOuterRef(*c)) return true;
  }
  return false;
}

ExprPtr ReplaceOuter(const ExprPtr& e, const Row& outer) {
  if (IsOuterRef(*e)) {
    size_t i = static_cast<size_t>(-1 - e->column);
    auto c = std::make_shared<Expr>(*Expr::Constant(i < outer.size() ? outer[i] : Value::Null()));
    c->type = e->type;
    c->nullable = e->nullable;
    return c;
  }
  if (!ExprHasOuterRef(*e)) return e;
  auto copy = std::make_shared<Expr>(*e);
  for (ExprPtr& c : copy->children) c = ReplaceOuter(c, outer);
  return copy;
}

}  // namespace

LogicalPtr LogicalOperator::Clone() const {
  auto out = CopyOperator(*this, [](const ExprPtr& e) { return e; });
  for (const auto& c : children) out->children.push_back(c->Clone());
  return out;
}

ExprPtr OuterRef(int column, std::string name, SqlType type, bool nullable) {
  auto e = std::make_shared<Expr>(*Expr::ColumnRef(-1 - column, std::move(name), type, nullable));
  return e;
}

bool HasOuterRefs(const LogicalOperator& plan) {
  bool found = false;
  // Only this plan's own expressions: a nested subquery's outer references
  // name this plan's rows.
  (void)CopyOperator(plan, [&](const ExprPtr& e) {
    found |= ExprHasOuterRef(*e);
    return e;
  });
  if (found) return true;
  for (size_t i = 0; i < plan.children.size(); ++i) {
    if (plan.kind == LogicalKind::kApply && i == 1) continue;
    if (HasOuterRefs(*plan.children[i])) return true;
  }
  return false;
}

LogicalPtr SubstituteOuter(const LogicalOperator& plan, const Row& outer) {
  auto out = CopyOperator(plan, [&](const ExprPtr& e) { return ReplaceOuter(e, outer); });
  for (size_t i = 0; i < plan.children.size(); ++i) {
    out->children.push_back(plan.kind == LogicalKind::kApply && i == 1
                                ? plan.children[i]->Clone()
                                : SubstituteOuter(*plan.children[i], outer));
  }
  return out;
}

namespace {

ExprPtr RemapOuterExpr(const ExprPtr& e, const std::function<int(int)>& column_of) {
  if (!ExprHasOuterRef(*e)) return e;
  auto copy = std::make_shared<Expr>(*e);
  if (IsOuterRef(*copy)) copy->column = -1 - column_of(-1 - copy->column);
  for (ExprPtr& c : copy->children) c = RemapOuterExpr(c, column_of);
  return copy;
}

void CollectOuter(const Expr& e, std::set<int>* out) {
  if (IsOuterRef(e)) out->insert(-1 - e.column);
  for (const ExprPtr& c : e.children) CollectOuter(*c, out);
}

void CollectOuter(const LogicalOperator& plan, std::set<int>* out) {
  (void)CopyOperator(plan, [&](const ExprPtr& e) {
    CollectOuter(*e, out);
    return e;
  });
  for (size_t i = 0; i < plan.children.size(); ++i) {
    if (plan.kind == LogicalKind::kApply && i == 1) continue;
    CollectOuter(*plan.children[i], out);
  }
}

}  // namespace

LogicalPtr RemapOuter(const LogicalOperator& plan, const std::function<int(int)>& column_of) {
  auto out = CopyOperator(plan, [&](const ExprPtr& e) { return RemapOuterExpr(e, column_of); });
  for (size_t i = 0; i < plan.children.size(); ++i) {
    out->children.push_back(plan.kind == LogicalKind::kApply && i == 1 ? plan.children[i]->Clone()
                                                                     : RemapOuter(*plan.children[i], column_of));
  }
  return out;
}

std::vector<int> OuterColumns(const LogicalOperator& plan) {
  std::set<int> columns;
  CollectOuter(plan, &columns);
  return std::vector<int>(columns.begin(), columns.end());
}

std::string LogicalOperator::ToString() const {
  std::string out;
  Print(*this, 0, &out);
  return out;
}

}  // namespace shale::sierra

#include "sierra/logical.h"

#include <fmt/format.h>

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
      return fmt::format("Values rows={} columns={}", rows.size(), columns.size());
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
  }
  return "?";
}

std::string LogicalOperator::ToString() const {
  std::string out;
  Print(*this, 0, &out);
  return out;
}

}  // namespace shale::sierra

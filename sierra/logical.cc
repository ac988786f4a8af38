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
  }
  return "?";
}

std::string LogicalOperator::ToString() const {
  std::string out;
  Print(*this, 0, &out);
  return out;
}

}  // namespace shale::sierra

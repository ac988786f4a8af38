// Common table expressions (non-recursive), as MySQL 8.0 / MariaDB write them:
//
//   WITH name [(col, ...)] AS (query) [, name2 AS (query2)] ...
//     {SELECT ... | UPDATE ... | DELETE ...}
//
// (also inside parentheses, derived tables, subqueries and INSERT ... SELECT,
// wherever a query may start). Each reference to a CTE name in the
// statement — and in later CTEs of the same WITH — becomes a derived table
// `(query) AS alias`, so the binder sees nothing new: a CTE referenced
// twice is evaluated twice. A column list renames the query's select list
// (its first term's, for a UNION). WITH RECURSIVE answers 1235.
#include "src/common/errors.h"
#include "src/sql/parser.h"

namespace shale::sql {
namespace {

// Replaces references to `ctes` in a parsed statement. Queries already
// substituted (the CTE bodies themselves) are not entered again.
class CteSubstitution {
 public:
  explicit CteSubstitution(const std::vector<CommonTableExpr>& ctes) : ctes_(ctes) {}

  void Select(ast::SelectStmt* s) {
    for (ast::SelectItem& item : s->items) Expr(item.expr.get());
    if (s->from) TableRef(&*s->from);
    Joins(&s->joins);
    Expr(s->where.get());
    for (ast::ExprPtr& g : s->group_by) Expr(g.get());
    Expr(s->having.get());
    for (ast::OrderItem& o : s->order_by) Expr(o.expr.get());
    for (ast::SelectStmt& term : s->union_terms) Select(&term);
  }

  void Update(ast::UpdateStmt* u) {
    TableRef(&u->table);
    Joins(&u->joins);
    for (ast::Assignment& a : u->assignments) Expr(a.value.get());
    Expr(u->where.get());
    for (ast::OrderItem& o : u->order_by) Expr(o.expr.get());
  }

  void Delete(ast::DeleteStmt* d) {
    TableRef(&d->table);
    Joins(&d->joins);
    Expr(d->where.get());
    for (ast::OrderItem& o : d->order_by) Expr(o.expr.get());
  }

 private:
  const CommonTableExpr* Find(const ast::TableName& name) const {
    if (!name.db.empty()) return nullptr;
    // The last definition of a name wins (a later CTE may not reuse a name:
    // ParseWithClause refuses that).
    for (const CommonTableExpr& c : ctes_) {
      if (c.name == name.table) return &c;
    }
    return nullptr;
  }

  bool IsBody(const ast::SelectStmt* s) const {
    for (const CommonTableExpr& c : ctes_) {
      if (c.query.get() == s) return true;
    }
    return false;
  }

  void Joins(std::vector<ast::JoinClause>* joins) {
    for (ast::JoinClause& j : *joins) {
      TableRef(&j.table);
      Expr(j.on.get());
    }
  }

  void TableRef(ast::TableRef* ref) {
    if (ref->nested) {
      // Parsed just now and owned by this statement alone.
      auto* tree = const_cast<ast::JoinTree*>(ref->nested.get());
      TableRef(&tree->first);
      Joins(&tree->joins);
      return;
    }
    if (ref->derived) {
      Query(ref->derived);
      return;
    }
    if (const CommonTableExpr* cte = Find(ref->name)) {
      ref->derived = cte->query;
      if (ref->alias.empty()) ref->alias = cte->name;
      ref->name = ast::TableName{};
    }
  }

  void Query(const std::shared_ptr<const ast::SelectStmt>& q) {
    if (!q || IsBody(q.get())) return;
    // Subqueries and derived tables are built by the parser for this
    // statement and not yet shared with anything else.
    Select(const_cast<ast::SelectStmt*>(q.get()));
  }

  void Expr(ast::Expr* e) {
    if (e == nullptr) return;
    for (ast::ExprPtr& c : e->children) Expr(c.get());
    for (ast::ExprPtr& o : e->order_by) Expr(o.get());
    Query(e->subquery);
  }

  const std::vector<CommonTableExpr>& ctes_;
};

// Renames the select list of `q` (its first term's, for a UNION) to `columns`.
Status RenameColumns(ast::SelectStmt* q, const std::vector<std::string>& columns) {
  ast::SelectStmt* first = q;
  while (!first->union_terms.empty()) first = &first->union_terms.front();
  if (first->items.size() != columns.size()) {
    return SqlError(ErrorCode::kWithColumnCount, "WITH column list and SELECT field list have different column counts");
  }
  for (size_t i = 0; i < columns.size(); ++i) {
    if (first->items[i].expr && first->items[i].expr->kind == ast::ExprKind::kStar) {
      return SqlError(ErrorCode::kNotSupportedYet,
                      "This version of Shale doesn't yet support 'a WITH column list over SELECT *'");
    }
    first->items[i].alias = columns[i];
  }
  return Status::OK();
}

}  // namespace

Status Parser::ParseWithClause(std::vector<CommonTableExpr>* out) {
  SHALE_RETURN_IF_ERROR(ExpectKeyword("WITH"));
  if (AtKeyword("RECURSIVE")) return NotSupported("WITH RECURSIVE");
  while (true) {
    CommonTableExpr cte;
    SHALE_ASSIGN_OR_RETURN(cte.name, ParseIdentifier());
    for (const CommonTableExpr& before : *out) {
      if (before.name == cte.name) {
        return SqlError(ErrorCode::kWithDuplicateName, "Duplicate query name `{}` in WITH clause", cte.name);
      }
    }
    std::vector<std::string> columns;
    if (AcceptOperator("(")) {
      while (true) {
        SHALE_ASSIGN_OR_RETURN(std::string col, ParseIdentifier());
        columns.push_back(std::move(col));
        if (!AcceptOperator(",")) break;
      }
      SHALE_RETURN_IF_ERROR(ExpectOperator(")"));
    }
    SHALE_RETURN_IF_ERROR(ExpectKeyword("AS"));
    SHALE_RETURN_IF_ERROR(ExpectOperator("("));
    SHALE_ASSIGN_OR_RETURN(ast::SelectStmt q, ParseQuery());
    SHALE_RETURN_IF_ERROR(ExpectOperator(")"));
    if (!columns.empty()) SHALE_RETURN_IF_ERROR(RenameColumns(&q, columns));
    // A CTE may read the ones before it.
    CteSubstitution(*out).Select(&q);
    cte.query = std::make_shared<ast::SelectStmt>(std::move(q));
    out->push_back(std::move(cte));
    if (!AcceptOperator(",")) break;
  }
  return Status::OK();
}

void SubstituteCtes(const std::vector<CommonTableExpr>& ctes, ast::SelectStmt* s) { CteSubstitution(ctes).Select(s); }
void SubstituteCtes(const std::vector<CommonTableExpr>& ctes, ast::UpdateStmt* s) { CteSubstitution(ctes).Update(s); }
void SubstituteCtes(const std::vector<CommonTableExpr>& ctes, ast::DeleteStmt* s) { CteSubstitution(ctes).Delete(s); }

Status CheckCteTarget(const std::vector<CommonTableExpr>& ctes, const ast::TableName& name,
                      const char* statement) {
  if (!name.db.empty()) return Status::OK();
  for (const CommonTableExpr& c : ctes) {
    if (c.name == name.table) {
      return SqlError(ErrorCode::kNonUpdatableTable, "The target table {} of the {} is not updatable", c.name,
                      statement);
    }
  }
  return Status::OK();
}

}  // namespace shale::sql

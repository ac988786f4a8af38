// exec::Session::Describe: the result columns of a statement without running
// it (COM_STMT_PREPARE's column metadata). The statement is parsed, its
// privileges are checked and it is bound exactly as Execute would; a bound
// query or SHOW gives its plan's columns, EXPLAIN its two columns, the
// account/status statements that answer with rows are run (they only read),
// everything else (DML, DDL, SET, ...) has none.
#include "planner/planner.h"
#include "src/common/errors.h"
#include "src/common/warnings.h"
#include "src/exec/engine.h"
#include "src/exec/executor.h"
#include "src/exec/session.h"
#include "src/sql/binder.h"
#include "src/sql/parser.h"

namespace shale::exec {
namespace ast = sql::ast;

Result<std::vector<ColumnInfo>> Session::Describe(std::string_view sql) {
  sql::Parser parser(sql);
  SHALE_ASSIGN_OR_RETURN(std::optional<ast::Statement> parsed, parser.Next());
  if (!parsed.has_value()) return SqlError(ErrorCode::kEmptyQuery, "Query was empty");
  const ast::Statement& stmt = *parsed;
  // Warnings of binding (constant folding) belong to an execution, not here.
  std::vector<SqlWarning> dropped;
  ScopedWarningSink sink(&dropped);
  if (const auto* admin = std::get_if<ast::AdminStmt>(&stmt)) {
    using Kind = ast::AdminStmt::Kind;
    if (admin->kind != Kind::kShowGrants && admin->kind != Kind::kShowStatus &&
        admin->kind != Kind::kShowProcesslist) {
      return std::vector<ColumnInfo>{};
    }
    // Read-only statements: run them for their columns, keeping the
    // session's warnings as they were.
    std::vector<Warning> saved = warnings_;
    Result<StatementResult> r = ExecuteAdmin(*admin);
    warnings_ = std::move(saved);
    SHALE_RETURN_IF_ERROR(r.status());
    return r->columns;
  }
  SHALE_RETURN_IF_ERROR(CheckPrivileges(stmt));
  const std::map<std::string, Value> globals = engine_->global_variables();
  const sql::BindContext ctx = MakeBindContext(&globals);  // LAST_INSERT_ID(x) remembers nothing
  SHALE_ASSIGN_OR_RETURN(sql::BoundStatement bound, sql::Bind(stmt, ctx));
  if (const auto* plan = std::get_if<sql::PlanCmd>(&bound)) {
    SHALE_RETURN_IF_ERROR(CheckPlanPrivileges(*plan->plan));
    const sierra::LogicalKind kind = plan->plan->kind;
    if (kind == sierra::LogicalKind::kInsert || kind == sierra::LogicalKind::kUpdate ||
        kind == sierra::LogicalKind::kDelete) {
      return std::vector<ColumnInfo>{};
    }
    return plan->plan->columns;
  }
  if (const auto* explain = std::get_if<sql::ExplainCmd>(&bound)) {
    SHALE_ASSIGN_OR_RETURN(auto physical, planner::Plan(*explain->plan));
    // EXPLAIN only reads the slices' row counts: cheap, and no data.
    SHALE_ASSIGN_OR_RETURN(StatementResult r, ExplainPlan(engine_, *physical));
    return r.columns;
  }
  return std::vector<ColumnInfo>{};
}

}  // namespace shale::exec

// Session's use of the plan cache (src/exec/plan_cache.h): finding a
// statement's cached plan, making a template the first time a shape is
// seen, and invalidation.
#include <cctype>
#include <utility>

#include "src/common/datetime.h"
#include "src/common/user_variables.h"
#include "src/common/warnings.h"
#include "src/catalog/catalog.h"
#include "src/exec/engine.h"
#include "src/exec/plan_cache.h"
#include "src/exec/session.h"
#include "src/sql/binder.h"
#include "src/sql/parser.h"
#include "src/common/module_profile.h"

namespace shale::exec {

namespace ast = sql::ast;

bool Session::PlanCacheEnabled() const { return Derived().plan_cache; }

bool Session::PushdownEnabled() const { return Derived().pushdown; }

planner::PlanOptions Session::PlanOptionsOf() const {
  planner::PlanOptions options;
  // Batched lookups only pay across nodes; off with the other push-downs.
  options.batched_lookups = engine_->txn()->router() != nullptr && PushdownEnabled();
  return options;
}

void Session::AfterStatementForPlanCache(const ast::Statement& stmt) {
  // Statements that cannot change what a SELECT binds to leave the cache
  // alone; every other one (SET, USE, DDL, account statements, ...) starts
  // a new epoch. DDL also publishes new table definitions, which the
  // entries check by themselves.
  if (std::holds_alternative<ast::SelectStmt>(stmt) || std::holds_alternative<ast::InsertStmt>(stmt) ||
      std::holds_alternative<ast::UpdateStmt>(stmt) || std::holds_alternative<ast::DeleteStmt>(stmt) ||
      std::holds_alternative<ast::TransactionStmt>(stmt) || std::holds_alternative<ast::ShowStmt>(stmt)) {
    return;
  }
  ++plan_cache_epoch_;
}

namespace {

// A database whose tables are made at bind time from server state (with it
// current, `FROM tables` names no system schema in the text).
bool IsSystemSchema(const std::string& db) {
  std::string lower = db;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower == "information_schema" || lower == "system" || lower == "mysql" || lower == "performance_schema" ||
         lower == "sys";
}

// Binds one statement's text in `ctx`: its plan, or null when it does not
// parse to one statement that binds to a plan.
sierra::LogicalPtr BindPlan(std::string_view text, const sql::BindContext& ctx,
                            std::shared_ptr<const ast::Statement>* statement) {
  sql::Parser parser(text);
  auto next = parser.Next();
  if (!next.ok() || !next->has_value()) return nullptr;
  auto stmt = std::make_shared<ast::Statement>(std::move(**next));
  auto after = parser.Next();
  if (!after.ok() || after->has_value()) return nullptr;
  auto bound = sql::Bind(*stmt, ctx);
  if (!bound.ok()) return nullptr;
  auto* plan = std::get_if<sql::PlanCmd>(&*bound);
  if (plan == nullptr || plan->plan == nullptr) return nullptr;
  if (statement != nullptr) *statement = std::move(stmt);
  return std::move(plan->plan);
}

}  // namespace

std::shared_ptr<const ast::Statement> Session::LookUpPlanCache(std::string_view sql) {
  profile::ModuleScope profile_scope(profile::Module::kPlanCache);
  cached_plan_.reset();
  if (!PlanCacheEnabled() || IsSystemSchema(current_db_)) return nullptr;
  std::optional<StatementShape> shape = ShapeOf(sql);
  if (!shape) return nullptr;
  std::string key = current_db_;
  key += '\0';
  key += shape->key;
  const std::shared_ptr<const std::map<std::string, Value>> globals = engine_->GlobalVariablesSnapshot();
  if (const PlanCacheEntry* entry = plan_cache_.Find(key)) {
    bool valid = entry->epoch == plan_cache_epoch_ && entry->globals == globals;
    if (valid && entry->tmpl) {
      for (const auto& table : entry->tmpl->tables()) {
        auto now = engine_->catalog()->GetTable(table->db, table->name);
        if (!now.ok() || *now != table) {
          valid = false;
          break;
        }
      }
    }
    if (valid) {
      if (!entry->tmpl) return nullptr;  // known not to be cacheable
      plan_cache_.hits.fetch_add(1, std::memory_order_relaxed);
      cached_plan_ = entry->tmpl->Instantiate(shape->params);
      return entry->statement;
    }
    plan_cache_.Erase(key);
  }
  plan_cache_.misses.fetch_add(1, std::memory_order_relaxed);

  // A new shape: bind it as written and with two sentinel sets (see
  // plan_cache.h, 2.). The binds run in the statement's contexts, with
  // their warnings discarded; a written statement whose bind warns is not
  // cached (a cached run would not warn).
  PlanCacheEntry entry;
  entry.epoch = plan_cache_epoch_;
  entry.globals = globals;
  std::vector<SqlWarning> raised;
  std::shared_ptr<const ast::Statement> statement;
  sierra::LogicalPtr written, sentinel_plan, check_plan;
  const std::vector<Value> set0 = SentinelParams(*shape, 0);
  const std::vector<Value> set1 = SentinelParams(*shape, 1);
  {
    ScopedWarningSink sink(&raised);
    ScopedUserVariables user_variables(&user_variables_);
    ScopedTemporalContext clock(StatementClock());
    sql::BindContext ctx = MakeBindContext(globals.get());
    std::optional<uint64_t> set_last_insert_id;
    ctx.set_last_insert_id = &set_last_insert_id;
    written = BindPlan(sql, ctx, &statement);
    if (written && raised.empty() && !set_last_insert_id) {
      sentinel_plan = BindPlan(WithParams(sql, *shape, set0), ctx, nullptr);
      check_plan = BindPlan(WithParams(sql, *shape, set1), ctx, nullptr);
    }
  }
  if (written && sentinel_plan && check_plan && raised.empty()) {
    const std::string written_print = PlanFingerprint(*written);
    const std::string check_print = PlanFingerprint(*check_plan);
    std::optional<PlanTemplate> tmpl = PlanTemplate::Make(std::move(sentinel_plan), set0);
    if (tmpl && PlanFingerprint(*tmpl->Instantiate(shape->params)) == written_print &&
        PlanFingerprint(*tmpl->Instantiate(set1)) == check_print) {
      entry.tmpl = std::make_shared<const PlanTemplate>(std::move(*tmpl));
      entry.statement = statement;
    }
  }
  const bool cacheable = entry.tmpl != nullptr;
  plan_cache_.Put(std::move(key), std::move(entry));
  if (!cacheable) return nullptr;
  // This run already uses the plan bound from its text.
  cached_plan_ = std::move(written);
  return statement;
}

}  // namespace shale::exec

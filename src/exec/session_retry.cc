// In-cluster retry of single-statement autocommit transactions
// (docs/cluster.md "Failures while statements run").
//
// A statement that fails because the cluster changed under it — a node
// holding a replica stopped answering, a data request met a newer epoch or
// slice map, this node lost its quorum for a moment — fails with
// ER_UNKNOWN_COM_ERROR 1047 (SQLSTATE 08S01) and nothing it wrote was
// committed (an unknown commit outcome is 1180, never retried). When the
// statement is its own transaction (autocommit, no transaction open) the
// session runs it again, bound and planned afresh against the slice map as
// it is then, a bounded number of times: each retry waits for the metadata
// to change (a failed node removed, a replica moved) or for a growing
// backoff, whichever comes first. Statements in a multi-statement
// transaction are never retried here: the client gets the error and the
// transaction is rolled back (Session::RunInTransaction).
#include <atomic>
#include <chrono>
#include <optional>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#include "src/common/errors.h"
#include "src/common/log.h"
#include "src/exec/engine.h"
#include "src/exec/executor.h"
#include "src/exec/session.h"
#include "src/sql/parser.h"
#include "src/txn/data_router.h"

namespace shale::exec {
namespace {

// Attempts after the first, and the time they may take all together.
constexpr int kMaxRetries = 8;
constexpr std::chrono::milliseconds kRetryBudget{6000};
constexpr std::chrono::milliseconds kFirstBackoff{50};
constexpr std::chrono::milliseconds kMaxBackoff{1600};

// Statements that are whole transactions when autocommit is on and may be
// run again after failing without having committed anything.
bool RetryableKind(const sql::ast::Statement& stmt) {
  if (const auto* del = std::get_if<sql::ast::DeleteStmt>(&stmt)) return !del->truncate;
  return std::holds_alternative<sql::ast::SelectStmt>(stmt) || std::holds_alternative<sql::ast::InsertStmt>(stmt) ||
         std::holds_alternative<sql::ast::UpdateStmt>(stmt);
}

// The failures an autocommit statement is run again after: the retryable
// cluster errors (1047), and 1412 "Table definition has changed" from the
// commit check — the slice map of a table it wrote changed under it (a
// failed node's replicas stripped, a replica added): nothing was written,
// and binding again picks up the new map.
bool RetryableFailure(const Status& st) {
  return txn::IsRetryableClusterError(st) ||
         (st.code() == StatusCode::kSqlError &&
          st.mysql_code() == static_cast<uint16_t>(ErrorCode::kTableDefChanged));
}

// A table or database this node does not know (yet): DDL returns once the
// node that ran it has applied it, so another node may learn of it a
// moment later. Binding again after catching up with the leader's metadata
// gives the answer a client expects after the CREATE was acknowledged.
bool UnknownObject(const Status& st) {
  return st.code() == StatusCode::kSqlError &&
         (st.mysql_code() == static_cast<uint16_t>(ErrorCode::kNoSuchTable) ||
          st.mysql_code() == static_cast<uint16_t>(ErrorCode::kBadDb));
}

std::atomic<uint64_t> g_statement_retries{0};

}  // namespace

uint64_t Session::StatementRetries() { return g_statement_retries.load(std::memory_order_relaxed); }

bool Session::MayRetryInCluster(const sql::ast::Statement& stmt) const {
  return engine_->txn()->router() != nullptr && !txn_ && autocommit() && RetryableKind(stmt);
}

bool Session::WaitBeforeRetry(int attempt, uint64_t metadata_before,
                              std::chrono::steady_clock::time_point deadline) const {
  const ClusterHooks& cluster = engine_->cluster_hooks();
  auto backoff = kFirstBackoff * (1 << std::min(attempt, 10));
  if (backoff > kMaxBackoff) backoff = kMaxBackoff;
  const auto until = std::min(deadline, std::chrono::steady_clock::now() + backoff);
  while (std::chrono::steady_clock::now() < until) {
    if (interrupted_.load(std::memory_order_relaxed)) return false;
    // The metadata changed (a node removed, the slice map updated): the
    // next attempt routes by it at once.
    if (cluster.metadata_index && cluster.metadata_index() != metadata_before) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return std::chrono::steady_clock::now() < deadline && !interrupted_.load(std::memory_order_relaxed);
}

Result<StatementResult> Session::ExecuteRetrying(const sql::ast::Statement& stmt,
                                                 const std::vector<Warning>& shown_warnings,
                                                 std::vector<SqlWarning>* raised, std::string_view cached_sql) {
  const bool may_retry = MayRetryInCluster(stmt);
  const ClusterHooks& cluster = engine_->cluster_hooks();
  const auto deadline = std::chrono::steady_clock::now() + kRetryBudget;
  // A cached statement's own tree, parsed for the second run: the cache
  // entry's tree holds another statement's literals (plan_cache.h), and
  // its instantiated plan went with the first run.
  std::optional<sql::ast::Statement> own;
  auto run_again = [&]() -> Result<StatementResult> {
    if (!cached_sql.empty() && !own) {
      sql::Parser parser(cached_sql);
      Result<std::optional<sql::ast::Statement>> next = parser.Next();
      if (!next.ok()) return next.status();
      if (!next->has_value()) return Status::Internal("a cached statement did not parse again");
      own = std::move(**next);
    }
    return ExecuteStatement(own ? *own : stmt, shown_warnings);
  };
  for (int attempt = 0;; ++attempt) {
    const uint64_t metadata_before = cluster.metadata_index ? cluster.metadata_index() : 0;
    Result<StatementResult> r = attempt == 0 ? ExecuteStatement(stmt, shown_warnings) : run_again();
    if (!r.ok() && attempt == 0 && UnknownObject(r.status()) && cluster.sync_metadata) {
      // Once: catch up with the leader's metadata; bind again only if that
      // brought something new.
      if (cluster.sync_metadata() && cluster.metadata_index() != metadata_before) {
        raised->clear();
        r = run_again();
      }
    }
    if (r.ok() || !may_retry || !RetryableFailure(r.status()) || attempt == kMaxRetries) return r;
    if (!WaitBeforeRetry(attempt, metadata_before, deadline)) return r;
    log::Info("connection {}: statement failed ({}), retrying it (attempt {})", connection_id_,
              r.status().message(), attempt + 2);
    g_statement_retries.fetch_add(1, std::memory_order_relaxed);
    raised->clear();  // the failed attempt's warnings
  }
}

Result<StatementResult> Session::ExplainAnalyze(const planner::PhysicalOperator& physical) {
  InterruptScope interrupt_scope(&interrupted_);
  const uint64_t moved_before = txn::StatementRowsMoved();
  const auto started = std::chrono::steady_clock::now();
  auto run = [&]() { return ExecutePlan(engine_, physical); };
  SHALE_ASSIGN_OR_RETURN(StatementResult ran, RunInTransaction(run, false, std::nullopt, /*own_transaction=*/false));
  const auto elapsed =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started).count();
  const uint64_t moved = txn::StatementRowsMoved() - moved_before;
  SHALE_ASSIGN_OR_RETURN(StatementResult plan, ExplainPlan(engine_, physical, /*tree=*/true, PushdownEnabled()));
  std::string text = plan.rows[0][0].as_string();
  text += fmt::format("\n-> executed: actual rows={}, rows sent between nodes: {}, time={:.3f} ms", ran.rows.size(),
                      moved, static_cast<double>(elapsed) / 1000.0);
  plan.rows[0][0] = Value::String(std::move(text));
  return plan;
}

}  // namespace shale::exec

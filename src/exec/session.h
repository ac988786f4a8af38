// Session: one client connection's view of the engine. The server
// (src/server) turns MySQL protocol commands into calls on a Session; the
// session runs SQL through parser -> binder -> Sierra -> planner -> executor
// -> storage and hands back results to be encoded on the wire.
//
// Thread-safety: a Session is used by one connection (one coroutine) at a
// time; many sessions share one Engine concurrently.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shale/status.h"
#include "src/common/datetime.h"
#include "sierra/column.h"
#include "sierra/logical.h"
#include "src/sql/ast.h"
#include "src/sql/information_schema.h"
#include "src/sql/binder.h"
#include "src/common/value.h"
#include "planner/planner.h"
#include "src/exec/plan_cache.h"
#include "src/common/warnings.h"
#include "src/txn/transaction.h"

namespace shale::catalog {
struct TableDef;
}

namespace shale::planner {
struct PhysicalOperator;
}

namespace shale::exec {

class Engine;

// Metadata of one result column, as the MySQL column definition needs it.
using ColumnInfo = sierra::ColumnInfo;

// The outcome of one successful statement: a result set, or an OK summary.
struct StatementResult {
  bool is_result_set = false;
  std::vector<ColumnInfo> columns;
  std::vector<Row> rows;
  uint64_t affected_rows = 0;
  uint64_t last_insert_id = 0;
  // The first AUTO_INCREMENT value the statement generated for a row it
  // inserted (LAST_INSERT_ID() after it); 0: none.
  uint64_t generated_insert_id = 0;
  uint16_t warnings = 0;
  std::string info;
  // INSERT/REPLACE (and LOAD DATA through them): rows given, and rows that
  // met an existing key (skipped by IGNORE, deleted by REPLACE, changed by
  // ON DUPLICATE KEY UPDATE), for the OK packet's info text.
  uint64_t records = 0;
  uint64_t duplicates = 0;
  // UPDATE, and INSERT ... ON DUPLICATE KEY UPDATE: the affected-rows value
  // for a client that connected with CLIENT_FOUND_ROWS (Session::
  // SetClientFoundRows): rows matched (UPDATE), or an unchanged duplicate
  // counted 1 instead of 0 (ODKU). Unset: the same as affected_rows.
  std::optional<uint64_t> found_rows;
};

struct Warning {
  std::string level;  // "Note", "Warning" or "Error"
  uint16_t code = 0;
  std::string message;
};

// Who a session runs as.
struct SessionUser {
  std::string user = "root";
  std::string host = "%";             // the account's host (pattern)
  std::string address = "localhost";  // the client's address
  bool superuser = true;              // root: every privilege, not in Accounts
};

// One connection as SHOW PROCESSLIST shows it.
struct ThreadInfo {
  uint32_t id = 0;
  std::string user;
  std::string host;
  std::string db;       // empty: none (NULL)
  std::string command;  // Sleep, Query, Execute, ...
  int64_t time = 0;     // seconds in this command (state)
  std::string state;
  std::string info;     // the statement running; empty: none (NULL)
};

// What a session may ask of the server that runs it (src/server implements
// it). Called on the statement's thread; implementations are thread-safe.
class SessionHost {
 public:
  virtual ~SessionHost() = default;
  virtual std::vector<ThreadInfo> Threads() const = 0;
  // Interrupts the statement connection `id` is running (query_only) or
  // closes the connection. false: no such connection.
  virtual bool Kill(uint32_t id, bool query_only) = 0;
  // SHOW STATUS rows (name, value) in name order, as seen by connection
  // `id`: its own counters, or the server's when `global`.
  virtual std::vector<std::pair<std::string, std::string>> StatusVariables(uint32_t id,
                                                                           bool global) const = 0;
};

// Statements counted per session for SHOW STATUS (Com_<name>).
enum class ComCounter : uint8_t {
  kAlterUser, kBegin, kChangeDb, kCommit, kCreateDb, kCreateTable, kCreateUser, kDelete,
  kDropDb, kDropTable, kDropUser, kGrant, kInsert, kKill, kRevoke, kRollback, kSelect,
  kSetOption, kShowDatabases, kShowGrants, kShowProcesslist, kShowStatus, kShowTables,
  kShowVariables, kShowWarnings, kUpdate,
  kCount
};
// "alter_user", "begin", ...: the status variable is "Com_" + name.
std::string_view ComCounterName(ComCounter c);

class Session {
 public:
  Session(Engine* engine, uint32_t connection_id);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Runs the ';'-separated statements of `sql` in order. Returns one entry per
  // statement that ran; execution stops at the first error, which is then the
  // last entry. An empty query yields one ER_EMPTY_QUERY (1065) error.
  std::vector<Result<StatementResult>> Execute(std::string_view sql);

  // The result columns `sql` (one statement) would produce, without running
  // it: for COM_STMT_PREPARE. Parse, privilege and bind errors are those
  // Execute would give. Empty for statements without a result set (DML,
  // DDL, SET, ...). session_describe.cc.
  Result<std::vector<ColumnInfo>> Describe(std::string_view sql);

  // COM_INIT_DB and CONNECT_WITH_DB: ER_BAD_DB_ERROR (1049) if unknown.
  Status SetCurrentDatabase(std::string_view db);
  const std::string& current_database() const { return current_db_; }

  // For the server status flags of OK/EOF packets.
  bool autocommit() const;
  // A multi-statement transaction is open (BEGIN, or autocommit=0 after a
  // statement that read or wrote a table): SERVER_STATUS_IN_TRANS.
  bool in_transaction() const { return txn_ != nullptr; }
  uint32_t connection_id() const { return connection_id_; }

  // Session system variables (lower-case names), seeded from the engine's
  // globals; `SET` changes them.
  const std::map<std::string, Value>& variables() const { return variables_; }
  // Sets session variable `name` (as SET SESSION does, without checks): the
  // server sets wait_timeout to interactive_timeout for interactive clients.
  void SetVariable(const std::string& name, Value value) {
    StoreVariable(name, std::move(value));
    ++plan_cache_epoch_;
  }

  // User variables (@name; lower-cased names), set by SET @name = expr.
  const std::map<std::string, Value>& user_variables() const { return user_variables_; }
  // LAST_INSERT_ID(): the first AUTO_INCREMENT value generated by the last
  // statement that generated one, or what LAST_INSERT_ID(expr) set since.
  uint64_t last_insert_id() const { return last_insert_id_; }
  // The most bytes of buffered rows the last statement that read tables
  // held at once, as its memory budget counted them (memory_budget.h;
  // SHOW SESSION STATUS Shale_last_query_memory_peak).
  uint64_t last_query_memory_peak() const { return last_query_memory_peak_.load(std::memory_order_relaxed); }

  // Warnings (and the error) of the last statement, as SHOW WARNINGS lists them.
  const std::vector<Warning>& warnings() const { return warnings_; }

  // The account the session runs as (default: root). Privileges are
  // checked on every statement against the account's current grants.
  void SetUser(SessionUser user) { user_ = std::move(user); }
  const SessionUser& user() const { return user_; }
  // The server, for KILL, SHOW PROCESSLIST and SHOW STATUS (may be null:
  // those statements then fail).
  void SetHost(SessionHost* host) { host_ = host; }

  // 1044 unless the session may use database `db` (some privilege in it).
  Status CheckDatabaseAccess(const std::string& db) const;

  // LOAD DATA LOCAL INFILE: asks the client for file `name` and returns its
  // whole content, or the error that ends the statement (the server sets
  // it when the client allows local files; unset, LOCAL is refused with
  // 3948). Called on the statement's thread.
  using LocalInfileReader = std::function<Result<std::string>(const std::string& name)>;
  void SetLocalInfileReader(LocalInfileReader reader) { local_infile_reader_ = std::move(reader); }
  // The client connected with CLIENT_FOUND_ROWS: an UPDATE's affected-rows
  // value (and ROW_COUNT()) is the rows it matched, not only those it
  // changed; ON DUPLICATE KEY UPDATE counts an unchanged row 1.
  void SetClientFoundRows(bool on) { client_found_rows_ = on; }

  // Asks the running statement to stop with ER_QUERY_INTERRUPTED (1317) at
  // its next check. Any thread. Cleared when the next statement starts.
  void Interrupt() { interrupted_.store(true, std::memory_order_relaxed); }
  const std::atomic<bool>& interrupted() const { return interrupted_; }
  // Autocommit statements this process ran again after a retryable cluster
  // error (SHOW STATUS Shale_statement_retries; session_retry.cc).
  static uint64_t StatementRetries();
  // What this process's statements waited for, by kind: SELECTs (reads) and
  // INSERT, REPLACE, UPDATE and DELETE (writes, with their commit when
  // autocommit): how many, and the RPC round trips and synced
  // writes on their path (src/common/critical_path.h; SHOW STATUS
  // Shale_read_statements, Shale_read_rpc_rounds, Shale_write_statements,
  // Shale_write_rpc_rounds, Shale_write_synced_writes).
  struct PathStats {
    uint64_t reads = 0, read_rounds = 0, writes = 0, write_rounds = 0, write_synced_writes = 0;
  };
  static PathStats StatementPaths();

  // Statements run, by kind (any thread may read).
  uint64_t com_count(ComCounter c) const {
    return com_counters_[static_cast<size_t>(c)].load(std::memory_order_relaxed);
  }

  // The plan cache's counters (src/exec/plan_cache.h): SELECTs served from
  // it, and candidate SELECTs that were bound (a new or invalidated shape).
  uint64_t plan_cache_hits() const { return plan_cache_.hits.load(std::memory_order_relaxed); }
  uint64_t plan_cache_misses() const { return plan_cache_.misses.load(std::memory_order_relaxed); }

 private:
  // The statement's NOW() and the session time_zone (src/common/datetime.h).
  TemporalContext StatementClock() const;
  Result<StatementResult> ExecuteStatement(const sql::ast::Statement& stmt,
                                           const std::vector<Warning>& shown_warnings);
  // ExecuteStatement, run again (bound and planned afresh) after a
  // retryable cluster error when the statement is its own autocommit
  // transaction (session_retry.cc). `raised`: the warnings sink, emptied
  // before a retry. `cached_sql`: the statement's text when `stmt` came
  // from the plan cache — then `stmt` is the cache entry's statement, with
  // the literals of the statement that made the entry, and is run only
  // with the plan instantiated from this statement's own literals
  // (cached_plan_); a second run (a retry) parses `cached_sql` and binds
  // that instead.
  Result<StatementResult> ExecuteRetrying(const sql::ast::Statement& stmt, const std::vector<Warning>& shown_warnings,
                                          std::vector<SqlWarning>* raised, std::string_view cached_sql = {});
  bool MayRetryInCluster(const sql::ast::Statement& stmt) const;
  // EXPLAIN ANALYZE: runs the query and returns the plan (FORMAT=TREE) with
  // what it did: rows returned, rows moved between nodes, time
  // (session_retry.cc, next to the other cluster-facing statement code).
  Result<StatementResult> ExplainAnalyze(const planner::PhysicalOperator& physical);
  // Waits before retry number attempt+1: until the cluster metadata changes
  // or the backoff passes. False when the statement should not be retried
  // (KILL QUERY, the retry budget spent).
  bool WaitBeforeRetry(int attempt, uint64_t metadata_before, std::chrono::steady_clock::time_point deadline) const;
  using WrittenTables = std::map<uint64_t, std::shared_ptr<const catalog::TableDef>>;
  // Commits the open transaction, if any (COMMIT, BEGIN, DDL, autocommit=1).
  Status EndTransaction();
  void RollbackTransaction();
  // Runs a statement that reads or writes tables in the open transaction
  // (starting one if autocommit is off), or in a transaction of its own
  // committed at its end (autocommit, or `own_transaction`). A failing
  // statement undoes only its own changes, except a deadlock victim's,
  // which rolls back the whole transaction.
  Result<StatementResult> RunInTransaction(const std::function<Result<StatementResult>()>& run, bool writes,
                                           std::optional<txn::LockMode> locking, bool own_transaction);
  Status CommitChecked(txn::Transaction* t, const WrittenTables& tables);
  txn::TxnOptions SessionTxnOptions() const;
  // SET TRANSACTION's options if given (once), else the session's.
  txn::TxnOptions TakeNextTxnOptions();
  std::chrono::milliseconds LockWaitTimeout() const;
  // Account, privilege, KILL and SHOW STATUS/PROCESSLIST/GRANTS statements
  // (session_admin.cc).
  Result<StatementResult> ExecuteAdmin(const sql::ast::AdminStmt& stmt);
  // The privileges `stmt` needs, checked before it is bound, so a denied
  // user learns nothing about the objects (as in MySQL).
  Status CheckPrivileges(const sql::ast::Statement& stmt) const;
  // 1142 unless every table the bound plan reads is readable.
  Status CheckPlanPrivileges(const sierra::LogicalOperator& plan) const;
  // Whether the session holds `privileges` on db.table (table empty: db.*,
  // db empty: *.*).
  bool Holds(uint32_t privileges, const std::string& db, const std::string& table) const;
  // Counts `stmt` in its Com_ counter.
  void Count(const sql::ast::Statement& stmt);
  // Filters SHOW DATABASES / SHOW TABLES rows to what the user may see.
  void FilterShown(const sql::ast::ShowStmt& show, StatementResult* r) const;
  // What information_schema shows this session: the objects it holds some
  // privilege on, the threads SHOW PROCESSLIST would list, row counts.
  sql::InfoSchemaSource InfoSchema() const;
  // SHOW [FULL] PROCESSLIST rows (Id, User, Host, db, Command, Time, State,
  // Info) of the threads the session may see, by id.
  std::vector<Row> ProcesslistRows(bool full) const;
  // LOAD DATA [LOCAL] INFILE (load_data.cc).
  Result<StatementResult> ExecuteLoadData(const sql::ast::LoadDataStmt& stmt);
  // Runs a bound statement (ExecuteStatement after binding).
  Result<StatementResult> ExecuteBound(const sql::ast::Statement& stmt, sql::BoundStatement* bound);
  // The BindContext of a statement of this session.
  // After a successful statement: TRUNCATE resets the table's
  // AUTO_INCREMENT counter (src/exec/auto_increment.h).
  Status AfterAutoIncrementStatement(const sql::ast::Statement& stmt);
  // sql_mode holds STRICT_TRANS_TABLES, STRICT_ALL_TABLES or TRADITIONAL.
  bool StrictSqlMode() const;
  // Whether the session's sql_mode names `flag` (upper case; TRADITIONAL
  // implies every flag asked for here).
  bool SqlModeHas(std::string_view flag) const;
  sql::BindContext MakeBindContext(const std::map<std::string, Value>* globals) const;
  // Runs a SELECT SQL_CALC_FOUND_ROWS plan: without its LIMIT, counting
  // every row into found_rows_, then applies the LIMIT.
  Result<StatementResult> ExecuteCalcFoundRows(const sierra::LogicalOperator& plan);

  // The plan cache (session_plan_cache.cc). LookUpPlanCache: when `sql`
  // is one cacheable statement with a valid entry (or a new one it could
  // make), the statement to run and, in cached_plan_, its plan with this
  // text's literals, which ExecuteStatement uses instead of binding; else
  // null. Switched off by the variable shale_plan_cache = OFF.
  std::shared_ptr<const sql::ast::Statement> LookUpPlanCache(std::string_view sql);
  bool PlanCacheEnabled() const;
  // shale_pushdown (src/exec/pushdown.h): 1 = on (the default), 0 = off.
  bool PushdownEnabled() const;
  // The planner's options for this session's statements (batched lookup
  // joins in a cluster with shale_pushdown on).
  planner::PlanOptions PlanOptionsOf() const;
  // Starts a new cache epoch after a statement that may change session
  // state a plan depends on.
  void AfterStatementForPlanCache(const sql::ast::Statement& stmt);

  Engine* engine_;
  uint32_t connection_id_;
  PlanCache plan_cache_;
  uint64_t plan_cache_epoch_ = 0;
  sierra::LogicalPtr cached_plan_;  // for the statement about to run
  std::string current_db_;
  std::map<std::string, Value> variables_;
  // What every statement reads of variables_, derived once per change of
  // variables_ (each write resets it) instead of looked up by name per
  // statement.
  struct DerivedSettings {
    bool autocommit = true;
    bool plan_cache = true;
    bool pushdown = true;
    std::optional<std::string> sql_mode;  // upper-cased; nullopt: the default (every flag)
    TemporalContext zone;                 // time_zone parsed (now_micros unset)
    std::chrono::milliseconds lock_wait_timeout{50 * 1000};
    int64_t query_memory_limit = 0;
    txn::TxnOptions txn_options;
  };
  const DerivedSettings& Derived() const;
  mutable std::optional<DerivedSettings> derived_;
  // The one way variables_ is written: the derived settings go with it.
  void StoreVariable(const std::string& name, Value value) {
    variables_[name] = std::move(value);
    derived_.reset();
  }
  std::vector<Warning> warnings_;  // of the last statement, for SHOW WARNINGS
  std::unique_ptr<txn::Transaction> txn_;  // the open multi-statement transaction
  WrittenTables txn_tables_;               // tables txn_ wrote
  std::optional<txn::TxnOptions> next_txn_;  // SET TRANSACTION without scope
  std::map<std::string, Value> user_variables_;
  // ROW_COUNT(): affected rows of the last statement, -1 after a result set
  // or an error. FOUND_ROWS(): rows of the last SELECT (without its LIMIT
  // with SQL_CALC_FOUND_ROWS).
  int64_t row_count_ = -1;
  uint64_t found_rows_ = 0;
  uint64_t last_insert_id_ = 0;
  std::atomic<uint64_t> last_query_memory_peak_{0};
  SessionUser user_;
  SessionHost* host_ = nullptr;
  LocalInfileReader local_infile_reader_;
  bool client_found_rows_ = false;
  std::atomic<bool> interrupted_{false};
  std::array<std::atomic<uint64_t>, static_cast<size_t>(ComCounter::kCount)> com_counters_{};
};

}  // namespace shale::exec

// exec::Session: privilege checks and the statements about accounts,
// privileges, threads and status (ast::AdminStmt). The rules follow MySQL
// 8.0 (docs/operations.md, "Users and privileges"):
//   - SELECT/INSERT/UPDATE/DELETE need that privilege on each table they
//     touch; UPDATE and DELETE with a WHERE clause also need SELECT on the
//     table; tables only read need SELECT. Denied: 1142.
//   - CREATE/DROP TABLE need CREATE/DROP on the table, CREATE/DROP
//     DATABASE on the database; USE, SHOW TABLES and a database given at
//     connect need some privilege in the database. Denied: 1142 / 1044.
//   - CREATE/DROP USER, REVOKE ALL need CREATE USER (1227); ALTER USER
//     needs it too unless the account is the session's own.
//   - GRANT and REVOKE need GRANT OPTION and the privileges themselves at
//     the level named (or above): denied with 1045 (*.*), 1044 (db.*) or
//     1142 (db.table).
//   - SET GLOBAL and KILL of another user's thread need SUPER (1227, 1095);
//     SHOW PROCESSLIST lists other users' threads only with PROCESS.
#include <algorithm>
#include <cctype>
#include <functional>
#include <set>

#include "src/catalog/accounts.h"
#include "src/catalog/credentials.h"
#include "src/common/errors.h"
#include "src/common/like.h"
#include "src/exec/engine.h"
#include "src/exec/session.h"

namespace shale::exec {
namespace ast = sql::ast;
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

ColumnInfo Column(std::string name, SqlType type, bool nullable = false) {
  ColumnInfo c;
  c.name = std::move(name);
  c.type = type;
  c.nullable = nullable;
  return c;
}

StatementResult ResultSet(std::vector<ColumnInfo> columns, std::vector<Row> rows) {
  StatementResult r;
  r.is_result_set = true;
  r.columns = std::move(columns);
  r.rows = std::move(rows);
  return r;
}

// The first privilege name of `bits`, as MySQL names the command in 1142.
std::string CommandName(uint32_t bits) {
  for (const auto& [bit, name] : catalog::PrivilegeNames()) {
    if (bits & bit) return std::string(name);
  }
  return "USAGE";
}

std::string AccountList(const std::vector<std::string>& quoted) {
  std::string out;
  for (const std::string& q : quoted) out += (out.empty() ? "" : ",") + q;
  return out;
}

}  // namespace

std::string_view ComCounterName(ComCounter c) {
  static constexpr std::string_view kNames[] = {
      "alter_user", "begin", "change_db", "commit", "create_db", "create_table", "create_user",
      "delete", "drop_db", "drop_table", "drop_user", "grant", "insert", "kill", "revoke",
      "rollback", "select", "set_option", "show_databases", "show_grants", "show_processlist",
      "show_status", "show_tables", "show_variables", "show_warnings", "update"};
  static_assert(std::size(kNames) == static_cast<size_t>(ComCounter::kCount));
  return kNames[static_cast<size_t>(c)];
}

// The counter of a statement, or kCount for one not counted.
static ComCounter CounterOf(const ast::Statement& stmt) {
  return std::visit(
      [](const auto& s) -> ComCounter {
        using T = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<T, ast::SelectStmt>) return ComCounter::kSelect;
        if constexpr (std::is_same_v<T, ast::InsertStmt>) return ComCounter::kInsert;
        if constexpr (std::is_same_v<T, ast::UpdateStmt>) return ComCounter::kUpdate;
        if constexpr (std::is_same_v<T, ast::DeleteStmt>) return ComCounter::kDelete;
        if constexpr (std::is_same_v<T, ast::CreateTableStmt>) return ComCounter::kCreateTable;
        if constexpr (std::is_same_v<T, ast::DropTableStmt>) return ComCounter::kDropTable;
        if constexpr (std::is_same_v<T, ast::CreateDatabaseStmt>) return ComCounter::kCreateDb;
        if constexpr (std::is_same_v<T, ast::DropDatabaseStmt>) return ComCounter::kDropDb;
        if constexpr (std::is_same_v<T, ast::UseStmt>) return ComCounter::kChangeDb;
        if constexpr (std::is_same_v<T, ast::SetStmt>) return ComCounter::kSetOption;
        if constexpr (std::is_same_v<T, ast::ShowStmt>) {
          switch (s.kind) {
            case ast::ShowStmt::Kind::kDatabases: return ComCounter::kShowDatabases;
            case ast::ShowStmt::Kind::kTables: return ComCounter::kShowTables;
            case ast::ShowStmt::Kind::kVariables: return ComCounter::kShowVariables;
            case ast::ShowStmt::Kind::kWarnings: return ComCounter::kShowWarnings;
            default: return ComCounter::kCount;
          }
        }
        if constexpr (std::is_same_v<T, ast::TransactionStmt>) {
          switch (s.kind) {
            case ast::TransactionStmt::Kind::kBegin: return ComCounter::kBegin;
            case ast::TransactionStmt::Kind::kCommit: return ComCounter::kCommit;
            case ast::TransactionStmt::Kind::kRollback: return ComCounter::kRollback;
            default: return ComCounter::kCount;  // savepoint statements are not counted
          }
        }
        if constexpr (std::is_same_v<T, ast::AdminStmt>) {
          using K = ast::AdminStmt::Kind;
          switch (s.kind) {
            case K::kCreateUser: return ComCounter::kCreateUser;
            case K::kDropUser: return ComCounter::kDropUser;
            case K::kAlterUser: return ComCounter::kAlterUser;
            case K::kGrant: return ComCounter::kGrant;
            case K::kRevoke: return ComCounter::kRevoke;
            case K::kShowGrants: return ComCounter::kShowGrants;
            case K::kKill: return ComCounter::kKill;
            case K::kShowStatus: return ComCounter::kShowStatus;
            case K::kShowProcesslist: return ComCounter::kShowProcesslist;
            case K::kLoadData: return ComCounter::kCount;
          }
        }
        return ComCounter::kCount;
      },
      stmt);
}

void Session::Count(const ast::Statement& stmt) {
  ComCounter c = CounterOf(stmt);
  if (c != ComCounter::kCount) com_counters_[static_cast<size_t>(c)].fetch_add(1, std::memory_order_relaxed);
}

bool Session::Holds(uint32_t privileges, const std::string& db, const std::string& table) const {
  if (user_.superuser) return true;
  auto account = engine_->accounts()->Find(user_.user, user_.host);
  if (!account) return false;
  return (account->PrivilegesOn(db, table) & privileges) == privileges;
}

Status Session::CheckDatabaseAccess(const std::string& db) const {
  if (user_.superuser || sql::IsInformationSchema(db)) return Status::OK();
  auto account = engine_->accounts()->Find(user_.user, user_.host);
  if (account && account->HasAnyIn(db)) return Status::OK();
  return SqlError(ErrorCode::kDbAccessDenied, "Access denied for user '{}'@'{}' to database '{}'",
                  user_.user, user_.address, db);
}

void Session::FilterShown(const ast::ShowStmt& show, StatementResult* r) const {
  if (user_.superuser) return;
  using Kind = ast::ShowStmt::Kind;
  if (show.kind == Kind::kDatabases && Holds(catalog::kPrivShowDatabases, "", "")) return;
  if (show.kind != Kind::kDatabases && show.kind != Kind::kTables) return;
  const std::string& db = show.db.empty() ? current_db_ : show.db;
  auto account = engine_->accounts()->Find(user_.user, user_.host);
  std::vector<Row> kept;
  for (Row& row : r->rows) {
    if (row.empty() || !row[0].is_string() || !account) continue;
    const std::string& name = row[0].as_string();
    bool visible = (show.kind == Kind::kDatabases && sql::IsInformationSchema(name)) ||
                   sql::IsInformationSchema(db);
    visible = visible || (show.kind == Kind::kDatabases
                              ? account->HasAnyIn(name)
                              : (account->PrivilegesOn(db, name) & catalog::kTablePrivileges) != 0);
    if (visible) kept.push_back(std::move(row));
  }
  r->rows = std::move(kept);
}

std::vector<Row> Session::ProcesslistRows(bool full) const {
  std::vector<Row> rows;
  if (host_ == nullptr) return rows;
  const bool all = Holds(catalog::kPrivProcess, "", "");
  for (ThreadInfo& t : host_->Threads()) {
    if (!all && t.user != user_.user) continue;
    std::string info = full ? t.info : t.info.substr(0, 100);
    rows.push_back({Value::Int(t.id), Value::String(t.user), Value::String(t.host),
                    t.db.empty() ? Value::Null() : Value::String(t.db), Value::String(t.command),
                    Value::Int(t.time), Value::String(t.state),
                    t.info.empty() ? Value::Null() : Value::String(info)});
  }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a[0].as_int() < b[0].as_int(); });
  return rows;
}

sql::InfoSchemaSource Session::InfoSchema() const {
  sql::InfoSchemaSource src;
  if (!user_.superuser) {
    // The account as of this statement; objects with no privilege at all
    // are left out, as MySQL does.
    auto account = engine_->accounts()->Find(user_.user, user_.host);
    src.visible = [account](const std::string& db, const std::string& table) {
      if (!account) return false;
      if (table.empty()) return account->HasAnyIn(db);
      return (account->PrivilegesOn(db, table) & catalog::kTablePrivileges) != 0;
    };
  }
  src.processlist = [this] { return ProcesslistRows(true); };
  Engine* engine = engine_;
  src.table_rows = [engine](const catalog::TableDef& t) -> std::optional<uint64_t> {
    uint64_t rows = 0;
    for (const catalog::SliceDef& def : t.primary.slices) {
      auto slice = engine->slices()->GetSlice(def.id);
      if (!slice.ok()) return std::nullopt;
      rows += (*slice)->GetStats().rows;
    }
    return rows;
  };
  auto var = [&](const char* name, std::string* out) {
    auto it = variables_.find(name);
    if (it != variables_.end() && it->second.is_string()) *out = it->second.as_string();
  };
  var("character_set_server", &src.charset);
  var("collation_server", &src.collation);
  return src;
}

Status Session::CheckPrivileges(const ast::Statement& stmt) const {
  if (user_.superuser) return Status::OK();
  auto table_denied = [&](uint32_t bits, const std::string& table) {
    return SqlError(ErrorCode::kTableAccessDenied, "{} command denied to user '{}'@'{}' for table '{}'",
                    CommandName(bits), user_.user, user_.address, table);
  };
  // Checks bits on a table; an unqualified name with no current database is
  // left to the binder (1046).
  auto need = [&](uint32_t bits, const ast::TableName& name) -> Status {
    const std::string& db = name.db.empty() ? current_db_ : name.db;
    if (db.empty() || name.table.empty()) return Status::OK();  // derived tables: see the plan
    if (sql::IsInformationSchema(db)) {
      // Everyone reads it (its rows are filtered); nobody writes it.
      if (bits == catalog::kPrivSelect) return Status::OK();
      return SqlError(ErrorCode::kDbAccessDenied, "Access denied for user '{}'@'{}' to database '{}'",
                      user_.user, user_.address, sql::kInformationSchema);
    }
    for (const auto& [bit, label] : catalog::PrivilegeNames()) {
      if ((bits & bit) && !Holds(bit, db, name.table)) return table_denied(bit, name.table);
    }
    return Status::OK();
  };
  auto need_db = [&](uint32_t bits, const std::string& db) -> Status {
    if (Holds(bits, db, "")) return Status::OK();
    return SqlError(ErrorCode::kDbAccessDenied, "Access denied for user '{}'@'{}' to database '{}'",
                    user_.user, user_.address, db);
  };
  // SELECT on the tables a query names; subqueries, derived tables and
  // UNION terms are checked on the bound plan (CheckPlanPrivileges).
  // A parenthesized join's tables are checked one by one.
  std::function<Status(const ast::TableRef&)> need_ref = [&](const ast::TableRef& ref) -> Status {
    if (!ref.nested) return need(catalog::kPrivSelect, ref.name);
    SHALE_RETURN_IF_ERROR(need_ref(ref.nested->first));
    for (const auto& j : ref.nested->joins) SHALE_RETURN_IF_ERROR(need_ref(j.table));
    return Status::OK();
  };
  auto need_select = [&](const ast::SelectStmt& q) -> Status {
    if (q.from) SHALE_RETURN_IF_ERROR(need_ref(*q.from));
    for (const auto& j : q.joins) SHALE_RETURN_IF_ERROR(need_ref(j.table));
    return Status::OK();
  };
  return std::visit(
      [&](const auto& s) -> Status {
        using T = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<T, ast::SelectStmt>) {
          return need_select(s);
        } else if constexpr (std::is_same_v<T, ast::ExplainStmt>) {
          // EXPLAIN UPDATE/DELETE: the written table is checked on the plan.
          return s.select ? need_select(*s.select) : Status::OK();
        } else if constexpr (std::is_same_v<T, ast::InsertStmt>) {
          // REPLACE may delete rows; ON DUPLICATE KEY UPDATE updates them.
          uint32_t bits = catalog::kPrivInsert;
          if (s.replace) bits |= catalog::kPrivDelete;
          if (!s.on_duplicate.empty()) bits |= catalog::kPrivUpdate;
          return need(bits, s.table);
        } else if constexpr (std::is_same_v<T, ast::UpdateStmt>) {
          // Multi-table: which table is written is known once bound
          // (CheckPlanPrivileges); every table read needs SELECT there.
          if (!s.joins.empty() || s.table.nested) return Status::OK();
          return need(catalog::kPrivUpdate | (s.where ? catalog::kPrivSelect : 0u), s.table.name);
        } else if constexpr (std::is_same_v<T, ast::DeleteStmt>) {
          if (s.multi) return Status::OK();
          if (s.truncate) return need(catalog::kPrivDrop, s.table.name);  // as MySQL
          return need(catalog::kPrivDelete | (s.where ? catalog::kPrivSelect : 0u), s.table.name);
        } else if constexpr (std::is_same_v<T, ast::CreateTableStmt>) {
          SHALE_RETURN_IF_ERROR(need(catalog::kPrivCreate, s.table));
          if (s.like) SHALE_RETURN_IF_ERROR(need(catalog::kPrivSelect, *s.like));
          if (s.as_select) SHALE_RETURN_IF_ERROR(need(catalog::kPrivInsert, s.table));
          return s.as_select ? need_select(*s.as_select) : Status::OK();
        } else if constexpr (std::is_same_v<T, ast::RenameTableStmt>) {
          // As MySQL: ALTER and DROP on the old name, CREATE and INSERT on the new.
          for (const auto& [from, to] : s.renames) {
            SHALE_RETURN_IF_ERROR(need(catalog::kPrivAlter | catalog::kPrivDrop, from));
            SHALE_RETURN_IF_ERROR(need(catalog::kPrivCreate | catalog::kPrivInsert, to));
          }
          return Status::OK();
        } else if constexpr (std::is_same_v<T, ast::DropTableStmt>) {
          for (const auto& t : s.tables) SHALE_RETURN_IF_ERROR(need(catalog::kPrivDrop, t));
          return Status::OK();
        } else if constexpr (std::is_same_v<T, ast::AlterTableStmt>) {
          // Index changes: ALTER TABLE needs ALTER, CREATE/DROP INDEX needs
          // INDEX; the statement forms are one AST, so either will do.
          if (!s.column_changes.empty()) SHALE_RETURN_IF_ERROR(need(catalog::kPrivAlter, s.table));
          if (s.rename_to) {
            SHALE_RETURN_IF_ERROR(need(catalog::kPrivAlter | catalog::kPrivDrop, s.table));
            SHALE_RETURN_IF_ERROR(need(catalog::kPrivCreate | catalog::kPrivInsert, *s.rename_to));
          }
          const std::string& db = s.table.db.empty() ? current_db_ : s.table.db;
          if (db.empty() || Holds(catalog::kPrivAlter, db, s.table.table) ||
              Holds(catalog::kPrivIndex, db, s.table.table)) {
            return Status::OK();
          }
          return table_denied(catalog::kPrivAlter, s.table.table);
        } else if constexpr (std::is_same_v<T, ast::CreateDatabaseStmt>) {
          return need_db(catalog::kPrivCreate, s.name);
        } else if constexpr (std::is_same_v<T, ast::DropDatabaseStmt>) {
          return need_db(catalog::kPrivDrop, s.name);
        } else if constexpr (std::is_same_v<T, ast::UseStmt>) {
          return CheckDatabaseAccess(s.db);
        } else if constexpr (std::is_same_v<T, ast::SetStmt>) {
          for (const auto& a : s.assignments) {
            if (a.scope == "global" && !Holds(catalog::kPrivSuper, "", "")) {
              return SqlError(ErrorCode::kSpecificAccessDenied,
                              "Access denied; you need (at least one of) the SUPER or "
                              "SYSTEM_VARIABLES_ADMIN privilege(s) for this operation");
            }
          }
          return Status::OK();
        } else if constexpr (std::is_same_v<T, ast::ShowStmt>) {
          using Kind = ast::ShowStmt::Kind;
          if (s.kind == Kind::kTables || s.kind == Kind::kTableStatus || s.kind == Kind::kCreateDatabase) {
            const std::string& db = s.db.empty() ? current_db_ : s.db;
            if (!db.empty()) return CheckDatabaseAccess(db);
          } else if (s.kind == Kind::kColumns || s.kind == Kind::kCreateTable) {
            const std::string& db = s.table.db.empty() ? current_db_ : s.table.db;
            if (db.empty() || sql::IsInformationSchema(db)) return Status::OK();
            auto account = engine_->accounts()->Find(user_.user, user_.host);
            if (!account || (account->PrivilegesOn(db, s.table.table) & catalog::kTablePrivileges) == 0) {
              return SqlError(ErrorCode::kTableAccessDenied,
                              "{} command denied to user '{}'@'{}' for table '{}'",
                              s.kind == Kind::kColumns ? "SELECT" : "SHOW", user_.user, user_.address,
                              s.table.table);
            }
          }
          return Status::OK();
        } else {
          return Status::OK();  // transactions; AdminStmt checks itself
        }
      },
      stmt);
}

Status Session::CheckPlanPrivileges(const sierra::LogicalOperator& plan) const {
  if (user_.superuser) return Status::OK();
  // The target of UPDATE/DELETE is read to find rows; that read was checked
  // with the statement (SELECT when there is a WHERE clause).
  // The written tables: one, or several stacked ones (multi-table
  // UPDATE/DELETE writing several tables, sierra/logical.h).
  std::set<uint64_t> targets;
  for (const sierra::LogicalOperator* w = &plan;
       (w->kind == sierra::LogicalKind::kUpdate || w->kind == sierra::LogicalKind::kDelete) && w->table;
       w = w->children[0].get()) {
    // The written table (multi-table UPDATE/DELETE are checked only here).
    targets.insert(w->table->id);
    const uint32_t bit = w->kind == sierra::LogicalKind::kUpdate ? catalog::kPrivUpdate : catalog::kPrivDelete;
    if (!Holds(bit, w->table->db, w->table->name)) {
      return SqlError(ErrorCode::kTableAccessDenied, "{} command denied to user '{}'@'{}' for table '{}'",
                      CommandName(bit), user_.user, user_.address, w->table->name);
    }
    if (!w->stacked_target) break;
  }
  std::vector<const sierra::LogicalOperator*> stack = {&plan};
  while (!stack.empty()) {
    const sierra::LogicalOperator* op = stack.back();
    stack.pop_back();
    if (op->kind == sierra::LogicalKind::kScan && op->table && !targets.count(op->table->id) &&
        !Holds(catalog::kPrivSelect, op->table->db, op->table->name)) {
      return SqlError(ErrorCode::kTableAccessDenied,
                      "SELECT command denied to user '{}'@'{}' for table '{}'", user_.user,
                      user_.address, op->table->name);
    }
    for (const auto& child : op->children) stack.push_back(child.get());
  }
  return Status::OK();
}

Result<StatementResult> Session::ExecuteAdmin(const ast::AdminStmt& s) {
  using Kind = ast::AdminStmt::Kind;
  catalog::Accounts* accounts = engine_->accounts();
  auto need_create_user = [&]() -> Status {
    if (Holds(catalog::kPrivCreateUser, "", "")) return Status::OK();
    return SqlError(ErrorCode::kSpecificAccessDenied,
                    "Access denied; you need (at least one of) the CREATE USER privilege(s) for "
                    "this operation");
  };
  // The account a name refers to (CURRENT_USER: the session's own).
  auto resolve = [&](const ast::AccountName& a) {
    ast::AccountName r = a;
    if (a.current) {
      r.user = user_.user;
      r.host = user_.host;
    }
    return r;
  };
  auto quoted = [](const ast::AccountName& a) { return "'" + a.user + "'@'" + a.host + "'"; };
  auto is_root = [](const ast::AccountName& a) { return a.user == "root"; };
  auto note = [&](uint16_t code, std::string message) {
    warnings_.push_back({"Note", code, std::move(message)});
  };

  switch (s.kind) {
    case Kind::kLoadData:
      return ExecuteLoadData(*s.load_data);
    case Kind::kCreateUser:
    case Kind::kDropUser:
    case Kind::kAlterUser: {
      const char* op = s.kind == Kind::kCreateUser ? "CREATE USER"
                       : s.kind == Kind::kDropUser ? "DROP USER"
                                                   : "ALTER USER";
      bool only_self = s.kind == Kind::kAlterUser;
      for (const auto& a : s.accounts) {
        auto r = resolve(a);
        only_self = only_self && r.user == user_.user && r.host == user_.host;
      }
      if (!only_self) SHALE_RETURN_IF_ERROR(need_create_user());
      // Check every account first: the statement changes all or nothing.
      std::vector<std::string> failed;
      std::vector<ast::AccountName> todo;
      for (const auto& a : s.accounts) {
        ast::AccountName r = resolve(a);
        if (a.identified) {
          if (r.plugin.empty()) {
            auto it = variables_.find("default_authentication_plugin");
            r.plugin = it != variables_.end() && it->second.is_string() ? it->second.as_string()
                                                                       : std::string(catalog::kNativePasswordPlugin);
          }
          if (!catalog::IsSupportedAuthPlugin(r.plugin)) {
            return SqlError(ErrorCode::kPluginIsNotLoaded, "Plugin '{}' is not loaded", r.plugin);
          }
        }
        if (is_root(r)) {
          failed.push_back(quoted(r));  // root is configured by --root-password
          continue;
        }
        bool exists = accounts->Find(r.user, r.host).has_value();
        if (s.kind == Kind::kCreateUser && exists) {
          if (s.if_not_exists) {
            note(3163, fmt::format("Authorization ID {} already exists.", quoted(r)));
            continue;
          }
          failed.push_back(quoted(r));
        } else if (s.kind != Kind::kCreateUser && !exists) {
          if (s.if_exists) {
            note(3162, fmt::format("Authorization ID {} does not exist.", quoted(r)));
            continue;
          }
          failed.push_back(quoted(r));
        } else {
          todo.push_back(std::move(r));
        }
      }
      if (!failed.empty()) {
        return SqlError(ErrorCode::kCannotUser, "Operation {} failed for {}", op, AccountList(failed));
      }
      SHALE_RETURN_IF_ERROR(EndTransaction());  // account statements commit implicitly
      for (const auto& r : todo) {
        if (s.kind == Kind::kCreateUser) {
          catalog::Account account;
          account.user = r.user;
          account.host = r.host;
          account.plugin = r.plugin.empty() ? std::string(catalog::kNativePasswordPlugin) : r.plugin;
          if (!r.identified) {
            auto it = variables_.find("default_authentication_plugin");
            if (it != variables_.end() && it->second.is_string()) account.plugin = it->second.as_string();
          }
          account.credential = catalog::MakeCredential(account.plugin, r.password);
          bool existed = false;
          SHALE_RETURN_IF_ERROR(accounts->Create(std::move(account), &existed));
        } else if (s.kind == Kind::kDropUser) {
          SHALE_ASSIGN_OR_RETURN(bool dropped, accounts->Drop(r.user, r.host));
          (void)dropped;
        } else {
          SHALE_ASSIGN_OR_RETURN(bool changed,
                                 accounts->SetCredential(r.user, r.host, r.plugin,
                                                         catalog::MakeCredential(r.plugin, r.password)));
          (void)changed;
        }
      }
      return StatementResult{};
    }

    case Kind::kGrant:
    case Kind::kRevoke: {
      const bool grant = s.kind == Kind::kGrant;
      const bool revoke_all = !grant && s.db.empty() && s.table.empty();
      if (revoke_all) {
        SHALE_RETURN_IF_ERROR(need_create_user());
        std::vector<ast::AccountName> targets;
        std::vector<std::string> failed;
        for (const auto& a : s.accounts) {
          ast::AccountName r = resolve(a);
          if (is_root(r) || !accounts->Find(r.user, r.host)) {
            failed.push_back(quoted(r));
          } else {
            targets.push_back(std::move(r));
          }
        }
        if (!failed.empty()) {
          return SqlError(ErrorCode::kCannotUser, "Operation REVOKE ALL failed for {}", AccountList(failed));
        }
        for (const auto& r : targets) SHALE_RETURN_IF_ERROR(accounts->RevokeAll(r.user, r.host).status());
        return StatementResult{};
      }
      // The level: *.*, db.* or db.table.
      std::string db;
      std::string table;
      if (s.db == "*") {
        // *.*
      } else {
        db = s.db.empty() ? current_db_ : s.db;
        if (db.empty()) return SqlError(ErrorCode::kNoDb, "No database selected");
        if (s.table != "*") table = s.table;
      }
      const uint32_t all = db.empty()      ? catalog::kGlobalPrivileges
                           : table.empty() ? catalog::kDbPrivileges
                                           : catalog::kTablePrivileges;
      uint32_t bits = 0;
      bool grant_option = grant && s.with_grant_option;
      for (const std::string& p : s.privileges) {
        if (p == "ALL") {
          bits |= all;
        } else if (p == "USAGE") {
        } else if (p == "GRANT OPTION") {
          grant_option = true;
        } else {
          uint32_t bit = catalog::PrivilegeFromName(p);
          if ((bit & all) == 0) {
            if (table.empty()) {
              return SqlError(ErrorCode::kWrongUsage, "Incorrect usage of DB GRANT and GLOBAL PRIVILEGES");
            }
            return Status::Sql(1144,
                               "Illegal GRANT/REVOKE command; please consult the manual to see "
                               "which privileges can be used");
          }
          bits |= bit;
        }
      }
      // The grantor needs GRANT OPTION and what it grants, at this level.
      if (!user_.superuser) {
        auto me = accounts->Find(user_.user, user_.host);
        bool ok = me && me->GrantOptionOn(db, table) && (me->PrivilegesOn(db, table) & bits) == bits;
        if (!ok) {
          if (db.empty()) {
            return SqlError(ErrorCode::kAccessDenied, "Access denied for user '{}'@'{}' (using password: YES)",
                            user_.user, user_.address);
          }
          if (table.empty()) {
            return SqlError(ErrorCode::kDbAccessDenied, "Access denied for user '{}'@'{}' to database '{}'",
                            user_.user, user_.address, db);
          }
          return SqlError(ErrorCode::kTableAccessDenied,
                          "{} command denied to user '{}'@'{}' for table '{}'", grant ? "GRANT" : "REVOKE",
                          user_.user, user_.address, table);
        }
      }
      if (!table.empty() && !engine_->catalog()->GetTable(db, table).ok()) {
        return SqlError(ErrorCode::kNoSuchTable, "Table '{}.{}' doesn't exist", db, table);
      }
      std::vector<ast::AccountName> targets;
      for (const auto& a : s.accounts) {
        ast::AccountName r = resolve(a);
        auto account = is_root(r) ? std::nullopt : accounts->Find(r.user, r.host);
        if (!account) {
          if (grant) {
            return SqlError(ErrorCode::kCantCreateUserWithGrant,
                            "You are not allowed to create a user with GRANT");
          }
          return SqlError(ErrorCode::kNonexistingGrant,
                          "There is no such grant defined for user '{}' on host '{}'", r.user, r.host);
        }
        if (!grant && !db.empty()) {
          // MySQL refuses to revoke a db or table grant that does not exist.
          const catalog::GrantLevel* level = nullptr;
          if (table.empty()) {
            auto it = account->dbs.find(db);
            if (it != account->dbs.end()) level = &it->second;
          } else {
            auto it = account->tables.find({db, table});
            if (it != account->tables.end()) level = &it->second;
          }
          if (level == nullptr) {
            if (table.empty()) {
              return SqlError(ErrorCode::kNonexistingGrant,
                              "There is no such grant defined for user '{}' on host '{}'", r.user, r.host);
            }
            return SqlError(ErrorCode::kNonexistingTableGrant,
                            "There is no such grant defined for user '{}' on host '{}' on table '{}'",
                            r.user, r.host, table);
          }
        }
        targets.push_back(std::move(r));
      }
      SHALE_RETURN_IF_ERROR(EndTransaction());
      for (const auto& r : targets) {
        SHALE_RETURN_IF_ERROR(accounts->Change(r.user, r.host, db, table, bits, grant_option, grant).status());
      }
      return StatementResult{};
    }

    case Kind::kShowGrants: {
      ast::AccountName r;
      if (s.accounts.empty()) {
        r.current = true;
      } else {
        r = s.accounts[0];
      }
      r = resolve(r);
      const bool own = r.user == user_.user && r.host == user_.host;
      if (!own && !Holds(catalog::kPrivSelect, "", "")) {
        return SqlError(ErrorCode::kDbAccessDenied, "Access denied for user '{}'@'{}' to database 'mysql'",
                        user_.user, user_.address);
      }
      std::vector<std::string> lines;
      if (is_root(r) && (own ? user_.superuser : r.host == "%")) {
        lines.push_back("GRANT ALL PRIVILEGES ON *.* TO `root`@`%` WITH GRANT OPTION");
      } else {
        auto account = accounts->Find(r.user, r.host);
        if (!account) {
          return SqlError(ErrorCode::kNonexistingGrant,
                          "There is no such grant defined for user '{}' on host '{}'", r.user, r.host);
        }
        lines = account->ShowGrants();
      }
      std::vector<Row> rows;
      for (auto& l : lines) rows.push_back({Value::String(std::move(l))});
      return ResultSet({Column("Grants for " + r.user + "@" + r.host, SqlType::Varchar(1024))},
                       std::move(rows));
    }

    case Kind::kKill: {
      if (host_ == nullptr) return Status::Internal("KILL: no server");
      const auto id = static_cast<uint32_t>(s.thread_id);
      std::optional<ThreadInfo> target;
      if (s.thread_id <= UINT32_MAX) {
        for (ThreadInfo& t : host_->Threads()) {
          if (t.id == id) target = std::move(t);
        }
      }
      if (!target) return SqlError(ErrorCode::kNoSuchThread, "Unknown thread id: {}", s.thread_id);
      if (target->user != user_.user && !Holds(catalog::kPrivSuper, "", "")) {
        return SqlError(ErrorCode::kKillDenied, "You are not owner of thread {}", s.thread_id);
      }
      if (!host_->Kill(id, s.kill_query)) {
        return SqlError(ErrorCode::kNoSuchThread, "Unknown thread id: {}", s.thread_id);
      }
      return StatementResult{};
    }

    case Kind::kShowStatus: {
      if (host_ == nullptr) return Status::Internal("SHOW STATUS: no server");
      std::vector<Row> rows;
      std::string like = s.like ? Lower(*s.like) : "";
      for (auto& [name, value] : host_->StatusVariables(connection_id_, s.global)) {
        if (s.like && !MatchLike(Lower(name), like)) continue;
        rows.push_back({Value::String(name), Value::String(value)});
      }
      return ResultSet({Column("Variable_name", SqlType::Varchar(64)), Column("Value", SqlType::Varchar(1024))},
                       std::move(rows));
    }

    case Kind::kShowProcesslist: {
      if (host_ == nullptr) return Status::Internal("SHOW PROCESSLIST: no server");
      std::vector<Row> rows = ProcesslistRows(s.full);
      return ResultSet({Column("Id", SqlType::BigInt()), Column("User", SqlType::Varchar(32)),
                        Column("Host", SqlType::Varchar(261)), Column("db", SqlType::Varchar(64), true),
                        Column("Command", SqlType::Varchar(16)), Column("Time", SqlType::Int()),
                        Column("State", SqlType::Varchar(64), true),
                        Column("Info", SqlType::Varchar(s.full ? 65535 : 100), true)},
                       std::move(rows));
    }
  }
  return Status::Internal("unknown account statement");
}

}  // namespace shale::exec

// Session: one client connection's view of the engine. The server
// (src/server) turns MySQL protocol commands into calls on a Session; the
// session runs SQL through parser -> binder -> Sierra -> planner -> executor
// -> storage and hands back results to be encoded on the wire.
//
// Thread-safety: a Session is used by one connection (one coroutine) at a
// time; many sessions share one Engine concurrently.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "shale/status.h"
#include "sierra/column.h"
#include "src/sql/ast.h"
#include "src/common/value.h"

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
  uint16_t warnings = 0;
  std::string info;
};

struct Warning {
  std::string level;  // "Note", "Warning" or "Error"
  uint16_t code = 0;
  std::string message;
};

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

  // COM_INIT_DB and CONNECT_WITH_DB: ER_BAD_DB_ERROR (1049) if unknown.
  Status SetCurrentDatabase(std::string_view db);
  const std::string& current_database() const { return current_db_; }

  // For the server status flags of OK/EOF packets.
  bool autocommit() const;
  bool in_transaction() const { return in_transaction_; }
  uint32_t connection_id() const { return connection_id_; }

  // Session system variables (lower-case names), seeded from the engine's
  // globals; `SET` changes them.
  const std::map<std::string, Value>& variables() const { return variables_; }

  // Warnings (and the error) of the last statement, as SHOW WARNINGS lists them.
  const std::vector<Warning>& warnings() const { return warnings_; }

 private:
  Result<StatementResult> ExecuteStatement(const sql::ast::Statement& stmt,
                                           const std::vector<Warning>& shown_warnings);
  void EndTransaction();

  Engine* engine_;
  uint32_t connection_id_;
  std::string current_db_;
  std::map<std::string, Value> variables_;
  std::vector<Warning> warnings_;  // of the last statement, for SHOW WARNINGS
  bool in_transaction_ = false;
  bool changed_data_in_transaction_ = false;
};

}  // namespace shale::exec

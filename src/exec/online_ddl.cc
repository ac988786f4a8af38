#include "src/exec/online_ddl.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "src/common/errors.h"
#include "src/common/log.h"
#include "src/exec/engine.h"
#include "src/txn/data_router.h"

namespace shale::exec {
namespace {

// How long one DDL statement keeps starting over after the cluster changed
// under it, and the pause between attempts.
constexpr std::chrono::seconds kOnlineDdlBudget{120};
constexpr std::chrono::milliseconds kAttemptPause{100};

// The failures after which the DDL starts over: the cluster changed under
// it (1047: a node did not answer, the slice map moved; 1412: the table's
// definition changed between reading and publishing it; a member not
// reachable for the barrier).
bool StartOver(const Status& st) {
  if (st.code() == StatusCode::kUnavailable) return true;
  return txn::IsRetryableClusterError(st) ||
         (st.code() == StatusCode::kSqlError && st.mysql_code() == static_cast<uint16_t>(ErrorCode::kTableDefChanged));
}

// The online DDLs running in this process: (engine, table id), registered
// before a fence is proposed and kept until RunOnlineDdl returns, so
// ClearOwnStaleFences never removes the fence of a DDL that is running.
std::mutex g_running_mu;
std::multiset<std::pair<const Engine*, uint64_t>> g_running;  // GUARDED_BY(g_running_mu)

class RunningDdl {
 public:
  RunningDdl(const Engine* engine, uint64_t table_id) : key_(engine, table_id) {
    std::lock_guard lock(g_running_mu);
    g_running.insert(key_);
  }
  ~RunningDdl() {
    std::lock_guard lock(g_running_mu);
    g_running.erase(g_running.find(key_));
  }
  RunningDdl(const RunningDdl&) = delete;
  RunningDdl& operator=(const RunningDdl&) = delete;

 private:
  const std::pair<const Engine*, uint64_t> key_;
};

bool IsRunning(const Engine* engine, uint64_t table_id) {
  std::lock_guard lock(g_running_mu);
  return g_running.count({engine, table_id}) > 0;
}

// One attempt at republishing `fenced` without its fence and pending
// indexes (whose slices every node drops when it applies that).
Status RemoveFence(Engine* engine, const std::shared_ptr<const catalog::TableDef>& fenced) {
  catalog::TableDef plain = *fenced;
  plain.ddl_owner.clear();
  plain.pending_indexes.clear();
  plain.ddl_allows_writes = false;
  return engine->catalog()->ReplaceTable(fenced, std::move(plain));
}

// Removes this node's fence from db.name, whatever placement the table has
// now. Best effort: a fence left behind is removed by the rebalancer once
// this node is gone, or by ClearOwnStaleFences once this DDL returned.
void Unfence(Engine* engine, const std::string& db, const std::string& name) {
  const std::string& self = engine->options().node_name;
  for (int i = 0; i < 20; ++i) {
    auto current = engine->catalog()->GetTable(db, name);
    if (!current.ok() || (*current)->ddl_owner != self) return;
    Status st = RemoveFence(engine, *current);
    if (st.ok()) return;
    log::Warn("online DDL on {}.{}: removing the fence failed ({}), trying again", db, name, st.ToString());
    std::this_thread::sleep_for(kAttemptPause);
  }
}

// Republishes `open` (an index build's fence that lets writers go on) as a
// fence that refuses them and passes the barrier again: once this returns,
// nobody writes the table until the publish. 1412 if the definition changed
// since `open` (the DDL starts over).
Result<std::shared_ptr<const catalog::TableDef>> CloseToWriters(Engine* engine,
                                                                const std::shared_ptr<const catalog::TableDef>& open) {
  catalog::TableDef closed = *open;
  closed.ddl_allows_writes = false;
  SHALE_RETURN_IF_ERROR(engine->catalog()->ReplaceTable(open, std::move(closed)));
  auto published = engine->catalog()->GetTable(open->db, open->name);
  if (!published.ok() || (*published)->id != open->id || (*published)->ddl_owner != open->ddl_owner ||
      (*published)->ddl_allows_writes) {
    return SqlError(ErrorCode::kTableDefChanged, "Table definition has changed, please retry transaction");
  }
  const ClusterHooks& hooks = engine->cluster_hooks();
  if (hooks.table_barrier) SHALE_RETURN_IF_ERROR(hooks.table_barrier((*published)->id, (*published)->version));
  return *published;
}

}  // namespace

bool UseOnlineDdl(Engine* engine) {
  return engine->txn()->router() != nullptr && engine->PlacementNodes().size() > 1;
}

Status CheckNotFenced(const catalog::TableDef& current) {
  if (current.ddl_owner.empty() || current.ddl_allows_writes) return Status::OK();
  return SqlError(ErrorCode::kUnknownCom,
                  "Table {}.{} is being changed by a DDL statement running on node '{}'; the statement was not run, "
                  "retry it",
                  current.db, current.name, current.ddl_owner);
}

void ClearOwnStaleFences(Engine* engine) {
  const std::string& self = engine->options().node_name;
  for (const auto& table : engine->catalog()->AllTables()) {
    if (table->ddl_owner != self || IsRunning(engine, table->id)) continue;
    Status st = RemoveFence(engine, table);
    log::Warn("table {}.{} was fenced by a DDL of an earlier run of this node: fence removed ({})", table->db,
              table->name, st.ToString());
  }
}

Status RunOnlineDdl(Engine* engine, const std::string& db, const std::string& name, const OnlineDdlSteps& steps) {
  catalog::Catalog* cat = engine->catalog();
  const std::string& self = engine->options().node_name;
  // Registered for the whole statement (the table keeps its id through
  // RENAME), so ClearOwnStaleFences leaves its fences alone.
  std::optional<RunningDdl> running;
  {
    SHALE_ASSIGN_OR_RETURN(std::shared_ptr<const catalog::TableDef> table, cat->GetTable(db, name));
    running.emplace(engine, table->id);
  }
  const auto deadline = std::chrono::steady_clock::now() + kOnlineDdlBudget;
  Status last;
  for (int attempt = 0;; ++attempt) {
    if (attempt > 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        log::Warn("online DDL on {}.{}: giving up after {} attempts: {}", db, name, attempt, last.ToString());
        return last;
      }
      std::this_thread::sleep_for(kAttemptPause);
    }
    SHALE_ASSIGN_OR_RETURN(std::shared_ptr<const catalog::TableDef> current, cat->GetTable(db, name));
    if (!current->ddl_owner.empty()) {
      // Another DDL (or an attempt of this node's that could not remove its
      // fence) is changing the table: wait for it.
      last = CheckNotFenced(*current);
      if (current->ddl_owner == self && attempt == 0) Unfence(engine, db, name);
      continue;
    }
    // 1. Fence.
    catalog::TableDef fenced = *current;
    fenced.ddl_owner = self;
    fenced.ddl_allows_writes = steps.writes_go_on;
    fenced.pending_indexes.clear();
    SHALE_RETURN_IF_ERROR(steps.prepare(&fenced));
    Status st = cat->ReplaceTable(current, std::move(fenced));
    if (!st.ok()) {
      if (!StartOver(st)) return st;
      last = st;
      continue;
    }
    auto published = cat->GetTable(db, name);
    if (!published.ok() || (*published)->ddl_owner != self || (*published)->id != current->id) {
      last = SqlError(ErrorCode::kTableDefChanged, "Table definition has changed, please retry transaction");
      Unfence(engine, db, name);
      continue;
    }
    // 2. Barrier: nobody writes the table from here on.
    const ClusterHooks& hooks = engine->cluster_hooks();
    if (hooks.table_barrier) st = hooks.table_barrier((*published)->id, (*published)->version);
    // 3. Work, 4. publish.
    if (st.ok()) {
      Result<catalog::TableDef> done = steps.work(**published);
      std::shared_ptr<const catalog::TableDef> base = *published;
      if (done.ok() && steps.writes_go_on && steps.check) {
        auto closed = CloseToWriters(engine, base);
        if (closed.ok()) {
          base = *closed;
          st = steps.check(*base);
        } else {
          st = closed.status();
        }
      } else if (!done.ok()) {
        st = done.status();
      }
      if (done.ok() && st.ok()) {
        done->ddl_owner.clear();
        done->pending_indexes.clear();
        done->ddl_allows_writes = false;
        st = cat->ReplaceTable(base, std::move(*done));
        if (st.ok()) return st;
      }
    }
    Unfence(engine, db, name);
    if (!StartOver(st)) return st;
    log::Info("online DDL on {}.{}: the cluster changed under attempt {} ({}); starting over", db, name, attempt + 1,
              st.ToString());
    last = st;
  }
}

}  // namespace shale::exec

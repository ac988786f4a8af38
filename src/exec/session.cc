#include "src/exec/session.h"

#include <algorithm>
#include <cctype>
#include <shared_mutex>

#include "src/common/user_variables.h"
#include "src/common/warnings.h"

#include "planner/planner.h"
#include "sierra/eval.h"
#include "rebalancer/placement.h"
#include "src/common/critical_path.h"
#include "src/common/errors.h"
#include "src/common/log.h"
#include "src/exec/auto_increment.h"
#include "src/exec/engine.h"
#include "src/exec/executor.h"
#include "src/exec/online_ddl.h"
#include "src/exec/system_tables.h"
#include "src/sql/binder.h"
#include "src/sql/parser.h"
#include "src/common/module_profile.h"

namespace shale::exec {
namespace ast = sql::ast;
namespace {

StatementResult Ok(uint64_t affected = 0) {
  StatementResult r;
  r.affected_rows = affected;
  return r;
}

// The replicas (serving and building) and ranking replicas each node holds
// in the applied slice map: where new slices should not pile up. In a
// cluster this node first catches up with the leader's metadata (one round
// trip), so a table just created through another node is counted.
rebalancer::NodeLoad CurrentNodeLoad(Engine* engine) {
  if (const ClusterHooks& hooks = engine->cluster_hooks(); hooks.sync_metadata) (void)hooks.sync_metadata();
  rebalancer::NodeLoad load;
  for (const auto& table : engine->catalog()->AllTables()) {
    for (const catalog::RepresentationDef* rep : table->StoredRepresentations()) {
      for (const catalog::SliceDef& s : rep->slices) {
        load.Add(s.replicas);
        for (const catalog::BuildingReplica& b : s.building) ++load.replicas[b.node];
      }
    }
  }
  return load;
}

// Cuts `rep` into `count` new slices with `replicas` replicas each, placed
// over the cluster's members (rebalancer::PlaceNewRepresentation: on the
// nodes holding the fewest replicas in *load, which grows by them), with ids
// from the catalog. With `create_local`, the slices this node holds a
// replica of are created now (an index is built into them before its
// definition is published) and their ids added to *created (so the caller
// can undo); otherwise every node creates its replicas when it applies the
// catalog change (Engine::OnTableChange).
Status PlaceSlicesFor(Engine* engine, uint32_t count, uint32_t replicas, catalog::RepresentationDef* rep,
                      rebalancer::NodeLoad* load, bool create_local, std::vector<storage::SliceId>* created,
                      const storage::SliceOptions& options = {}) {
  auto placements = rebalancer::PlaceNewRepresentation(count, replicas, engine->PlacementNodes(), load);
  for (const auto& p : placements) {
    catalog::SliceDef s;
    SHALE_ASSIGN_OR_RETURN(s.id, engine->catalog()->NextId());
    s.hash_begin = p.hash_begin;
    s.hash_end = p.hash_end;
    s.replicas = p.replicas;
    if (create_local && engine->HoldsReplica(s)) {
      SHALE_RETURN_IF_ERROR(engine->slices()->CreateSlice(s.id, options).status());
      created->push_back(s.id);
    }
    rep->slices.push_back(std::move(s));
  }
  return Status::OK();
}

// An index of an existing table: as many slices as the primary key, with the
// table's replica count.
Status CreateSlicesFor(Engine* engine, const catalog::TableDef& table, catalog::RepresentationDef* rep,
                       std::vector<storage::SliceId>* created) {
  rebalancer::NodeLoad load = CurrentNodeLoad(engine);
  return PlaceSlicesFor(engine, static_cast<uint32_t>(table.primary.slices.size()), catalog::WantedReplicas(table),
                        rep, &load, /*create_local=*/true, created, catalog::SliceOptionsOf(table));
}

void DropCreatedSlices(Engine* engine, const std::vector<storage::SliceId>& created) {
  std::unique_lock<std::shared_mutex> no_gc(engine->txn()->slice_drop_mutex());
  for (storage::SliceId id : created) (void)engine->slices()->DropSlice(id);
}

Status RunCreateTable(Engine* engine, sql::CreateTableCmd cmd) {
  catalog::Catalog* cat = engine->catalog();
  if (cat->GetTable(cmd.def.db, cmd.def.name).ok()) {
    if (cmd.if_not_exists) return Status::OK();
    return SqlError(ErrorCode::kTableExists, "Table '{}' already exists", cmd.def.name);
  }
  // About one slice per node: SLICES=n, else the larger of the node's
  // default and the member count.
  const std::vector<std::string> nodes = engine->PlacementNodes();
  const uint32_t count =
      cmd.slices ? cmd.slices : std::max<uint32_t>(engine->options().default_slices, static_cast<uint32_t>(nodes.size()));
  cmd.def.replicas = cmd.replicas;
  const uint32_t replicas = catalog::WantedReplicas(cmd.def);
  SHALE_ASSIGN_OR_RETURN(cmd.def.id, cat->NextId());
  std::vector<storage::SliceId> created;
  rebalancer::NodeLoad load = CurrentNodeLoad(engine);
  SHALE_RETURN_IF_ERROR(PlaceSlicesFor(engine, count, replicas, &cmd.def.primary, &load, false, &created));
  // Each secondary index is its own representation with its own slices.
  for (size_t i = 0; i < cmd.def.indexes.size(); ++i) {
    SHALE_RETURN_IF_ERROR(PlaceSlicesFor(engine, count, replicas, &cmd.def.indexes[i], &load, false, &created));
  }
  // The catalog change is the commit point; applying it creates every
  // node's replicas (before the change is written).
  bool made = false;
  return cat->CreateTable(std::move(cmd.def), cmd.if_not_exists, &made);
}

void DropRepresentationSlices(Engine* engine, const catalog::TableDef& t,
                              const catalog::RepresentationDef& rep) {
  std::unique_lock<std::shared_mutex> no_gc(engine->txn()->slice_drop_mutex());
  for (const auto& s : rep.slices) {
    Status st = engine->slices()->DropSlice(s.id);
    if (!st.ok() && !st.IsNotFound()) {
      // The representation is gone from the catalog; the slice is an orphan
      // that the next start removes.
      log::Warn("drop of slice {} of {}.{} ({}) failed: {}", s.id, t.db, t.name, rep.name,
                st.ToString());
    }
  }
}

// The value a new column takes in existing rows: its DEFAULT, else NULL,
// else (NOT NULL without DEFAULT) MySQL's implicit default, 0 or ''.
Value ImplicitDefault(const catalog::ColumnDef& c) {
  if (c.default_now) {
    // DEFAULT CURRENT_TIMESTAMP: the statement's time.
    const TemporalContext ctx = CurrentTemporalContext();
    auto now = CoerceToColumn(MakeTemporal(TypeId::kDatetime, UtcToLocal(ctx.now_micros, ctx), 6), c.type, c.name);
    if (now.ok()) return *now;
  }
  if (c.default_value) return *c.default_value;
  if (c.nullable) return Value::Null();
  // Zero dates and times ('0000-00-00', '00:00:00'), YEAR 0.
  if (c.type.is_temporal()) return Value::Temporal(c.type.id, 0, c.type.scale);
  if (c.type.id == TypeId::kYear) return Value::Int(0);
  return c.type.is_integer() ? Value::Int(0) : Value::String("");
}

// One row of an ALTER TABLE column change: its primary-representation key
// in slice `slice` and its re-encoded value.
struct RowRewrite {
  size_t slice;
  std::string key;
  std::string value;
};

// Reads every row of `old_def` (each slice at its ranking replica, here or
// on another node: docs/cluster.md "Data path") and converts it to `def`'s
// columns (`column_source`: the old column of each new one, -1 for a new
// column). A value that does not fit fails before anything is written.
Status ConvertRows(Engine* engine, const catalog::TableDef& old_def, const catalog::TableDef& def,
                   const std::vector<int>& column_source, std::vector<RowRewrite>* rewrites,
                   std::vector<Row>* new_rows) {
  for (size_t si = 0; si < old_def.primary.slices.size(); ++si) {
    SHALE_ASSIGN_OR_RETURN(txn::SliceHandle slice, engine->RouteSlice(old_def, old_def.primary.slices[si]));
    auto it = txn::ScanLatest(slice, storage::KeyRange::All());
    for (; it->Valid(); it->Next()) {
      Row old_row;
      SHALE_RETURN_IF_ERROR(DecodeRow(it->value(), &old_row));
      Row row(def.columns.size());
      for (size_t c = 0; c < def.columns.size(); ++c) {
        const catalog::ColumnDef& col = def.columns[c];
        const int src = column_source[c];
        Value v = src >= 0 ? old_row[src] : ImplicitDefault(col);
        if (v.is_null()) {
          if (!col.nullable) {
            return SqlError(ErrorCode::kWarnDataTruncated, "Data truncated for column '{}' at row {}", col.name,
                            new_rows->size() + 1);
          }
          row[c] = v;
          continue;
        }
        SHALE_ASSIGN_OR_RETURN(row[c], CoerceToColumn(v, col.type, col.name));
      }
      if (catalog::PrimaryKeyValues(def, row) != catalog::PrimaryKeyValues(old_def, old_row)) {
        return SqlError(ErrorCode::kNotSupportedYet,
                        "This version of Shale doesn't yet support 'changing primary-key values in ALTER TABLE'");
      }
      RowRewrite w;
      w.slice = si;
      w.key = std::string(it->key());
      EncodeRow(row, &w.value);
      rewrites->push_back(std::move(w));
      new_rows->push_back(std::move(row));
    }
    SHALE_RETURN_IF_ERROR(it->status());
  }
  return Status::OK();
}

// Every rewritten row in one atomic multi-slice write, to every replica of
// its slice (building ones too).
Status WriteRewrites(Engine* engine, const catalog::TableDef& old_def, std::vector<RowRewrite>* rewrites) {
  std::vector<storage::WriteBatch> batches(old_def.primary.slices.size());
  for (RowRewrite& w : *rewrites) batches[w.slice].Put(std::move(w.key), std::move(w.value));
  std::vector<std::pair<storage::SliceId, const storage::WriteBatch*>> writes;
  txn::Placement placement;
  for (size_t i = 0; i < batches.size(); ++i) {
    if (batches[i].empty()) continue;
    writes.emplace_back(old_def.primary.slices[i].id, &batches[i]);
    placement[old_def.primary.slices[i].id] = old_def.primary.slices[i].WriteReplicas();
  }
  if (writes.empty()) return Status::OK();
  return engine->txn()->CommitBatches(writes, &placement);
}

// Places a new representation for each of `indexes` (as many slices as the
// table's primary key, its replica count) in def->pending_indexes: online
// DDL's prepare step (online_ddl.h); every node creates its replicas of them
// when it applies the fence.
Status PlacePendingIndexes(Engine* engine, const std::vector<catalog::RepresentationDef>& indexes,
                           catalog::TableDef* def) {
  rebalancer::NodeLoad load = CurrentNodeLoad(engine);
  for (const catalog::RepresentationDef& index : indexes) {
    catalog::RepresentationDef rep = index;
    rep.slices.clear();
    SHALE_RETURN_IF_ERROR(PlaceSlicesFor(engine, static_cast<uint32_t>(def->primary.slices.size()),
                                         catalog::WantedReplicas(*def), &rep, &load, /*create_local=*/false,
                                         nullptr));
    def->pending_indexes.push_back(std::move(rep));
  }
  return Status::OK();
}

// ALTER TABLE ADD/DROP/MODIFY/CHANGE COLUMN in a cluster (online_ddl.h): the
// table is fenced with new index representations pending, every row is
// converted, the indexes are built from the new rows, the rows rewritten in
// place, and the new definition published with the new index slices.
Status RunAlterColumnsOnline(Engine* engine, const sql::AlterTableCmd& cmd) {
  OnlineDdlSteps steps;
  steps.prepare = [&](catalog::TableDef* def) -> Status {
    catalog::TableDef as_bound = *def;
    as_bound.ddl_owner.clear();
    // The statement was bound against cmd.old_table: only the slice map may
    // have changed since (the rebalancer).
    if (!catalog::OnlyPlacementDiffers(as_bound, *cmd.old_table)) {
      return SqlError(ErrorCode::kTableDefChanged, "Table definition has changed, please retry transaction");
    }
    return PlacePendingIndexes(engine, cmd.new_def->indexes, def);
  };
  steps.work = [&](const catalog::TableDef& fenced) -> Result<catalog::TableDef> {
    catalog::TableDef def = *cmd.new_def;
    def.primary.slices = fenced.primary.slices;
    def.indexes = fenced.pending_indexes;
    def.version = fenced.version;
    std::vector<RowRewrite> rewrites;
    std::vector<Row> new_rows;
    SHALE_RETURN_IF_ERROR(ConvertRows(engine, fenced, def, cmd.column_source, &rewrites, &new_rows));
    for (const catalog::RepresentationDef& index : def.indexes) {
      SHALE_RETURN_IF_ERROR(BuildIndex(engine, def, index, &new_rows));
    }
    SHALE_RETURN_IF_ERROR(WriteRewrites(engine, fenced, &rewrites));
    return def;
  };
  return RunOnlineDdl(engine, cmd.db, cmd.table, steps);
}

// ALTER TABLE ADD/DROP/MODIFY/CHANGE COLUMN, under the table's write lock:
// every row is converted in memory first (a value that does not fit fails
// the statement before anything is written), the secondary indexes are
// rebuilt into new slices from the new rows, then the rows are rewritten
// in place (primary keys keep their values, so rows keep their keys and
// slices), the new definition is published and the old index slices go.
// In a cluster: RunAlterColumnsOnline.
Status RunAlterColumns(Engine* engine, const sql::AlterTableCmd& cmd) {
  if (UseOnlineDdl(engine)) return RunAlterColumnsOnline(engine, cmd);
  catalog::Catalog* cat = engine->catalog();
  const catalog::TableDef& old_def = *cmd.old_table;
  std::lock_guard lock(engine->TableWriteMutex(old_def.id));
  SHALE_ASSIGN_OR_RETURN(auto current, cat->GetTable(cmd.db, cmd.table));
  if (current != cmd.old_table) {
    return SqlError(ErrorCode::kTableDefChanged, "Table definition has changed, please retry transaction");
  }
  catalog::TableDef def = *cmd.new_def;
  std::vector<RowRewrite> rewrites;
  std::vector<Row> new_rows;
  SHALE_RETURN_IF_ERROR(ConvertRows(engine, old_def, def, cmd.column_source, &rewrites, &new_rows));
  std::vector<storage::SliceId> created;
  Status st;
  for (catalog::RepresentationDef& index : def.indexes) {
    st = CreateSlicesFor(engine, def, &index, &created);
    if (st.ok()) st = BuildIndex(engine, def, index, &new_rows);
    if (!st.ok()) break;
  }
  if (st.ok()) st = WriteRewrites(engine, old_def, &rewrites);
  if (!st.ok()) {
    DropCreatedSlices(engine, created);
    return st;
  }
  SHALE_RETURN_IF_ERROR(cat->ReplaceTable(cmd.old_table, std::move(def)));
  for (const auto& index : old_def.indexes) DropRepresentationSlices(engine, old_def, index);
  return Status::OK();
}

// The index changes of `cmd` applied to `def`: the dropped indexes leave it
// (into *dropped, if given); 1091 for one that does not exist, 1061 for an
// added name that does.
Status DropIndexesFrom(const sql::AlterTableCmd& cmd, catalog::TableDef* def,
                       std::vector<catalog::RepresentationDef>* dropped) {
  for (const std::string& name : cmd.drop_indexes) {
    int i = def->FindIndex(name);
    if (i < 0) {
      return SqlError(ErrorCode::kCantDropFieldOrKey, "Can't DROP INDEX `{}`; check that it exists", name);
    }
    if (dropped) dropped->push_back(def->indexes[i]);
    def->indexes.erase(def->indexes.begin() + i);
  }
  for (const catalog::RepresentationDef& add : cmd.add_indexes) {
    if (def->FindIndex(add.name) >= 0) {
      return SqlError(ErrorCode::kDupKeyName, "Duplicate key name '{}'", add.name);
    }
  }
  return Status::OK();
}

// CREATE/DROP INDEX and ALTER TABLE ADD/DROP INDEX in a cluster
// (online_ddl.h): the new indexes are placed as pending representations
// with the fence, filled from the primary representation once nobody
// writes the table, and published with the drops in one change.
Status RunAlterTableOnline(Engine* engine, const sql::AlterTableCmd& cmd) {
  OnlineDdlSteps steps;
  steps.prepare = [&](catalog::TableDef* def) -> Status {
    catalog::TableDef check = *def;
    SHALE_RETURN_IF_ERROR(DropIndexesFrom(cmd, &check, nullptr));
    return PlacePendingIndexes(engine, cmd.add_indexes, def);
  };
  // Writers go on and maintain the pending indexes; the backfill reads a
  // snapshot taken after the barrier (BackfillIndex).
  steps.writes_go_on = true;
  steps.work = [&](const catalog::TableDef& fenced) -> Result<catalog::TableDef> {
    catalog::TableDef def = fenced;
    SHALE_RETURN_IF_ERROR(DropIndexesFrom(cmd, &def, nullptr));
    txn::TxnOptions options;
    options.read_only = true;
    std::unique_ptr<txn::Transaction> reader = engine->txn()->Begin(options);
    for (const catalog::RepresentationDef& rep : fenced.pending_indexes) {
      SHALE_RETURN_IF_ERROR(BackfillIndex(engine, fenced, rep, reader.get()));
      def.indexes.push_back(rep);
    }
    return def;
  };
  const bool any_unique = std::any_of(cmd.add_indexes.begin(), cmd.add_indexes.end(),
                                      [](const catalog::RepresentationDef& rep) { return rep.unique; });
  if (any_unique) steps.check = [&](const catalog::TableDef& closed) -> Status {
    for (const catalog::RepresentationDef& rep : closed.pending_indexes) {
      SHALE_RETURN_IF_ERROR(CheckUniqueEntries(engine, closed, rep));
    }
    return Status::OK();
  };
  return RunOnlineDdl(engine, cmd.db, cmd.table, steps);
}

// CREATE/DROP INDEX and ALTER TABLE ADD/DROP INDEX. Under the table's write
// lock (so no write slips between the build and the catalog change): new
// index slices are created and filled from the primary representation
// (checking UNIQUE), then the new definition is published — the commit
// point — and the dropped indexes' slices are removed. In a cluster:
// RunAlterTableOnline.
Status RunAlterTable(Engine* engine, const sql::AlterTableCmd& cmd) {
  if (UseOnlineDdl(engine)) return RunAlterTableOnline(engine, cmd);
  catalog::Catalog* cat = engine->catalog();
  SHALE_ASSIGN_OR_RETURN(auto table, cat->GetTable(cmd.db, cmd.table));
  std::lock_guard lock(engine->TableWriteMutex(table->id));
  // Re-read under the lock: the binder's view may be stale.
  SHALE_ASSIGN_OR_RETURN(table, cat->GetTable(cmd.db, cmd.table));
  catalog::TableDef def = *table;
  std::vector<catalog::RepresentationDef> dropped;
  SHALE_RETURN_IF_ERROR(DropIndexesFrom(cmd, &def, &dropped));
  std::vector<storage::SliceId> created;
  Status st;
  for (const catalog::RepresentationDef& add : cmd.add_indexes) {
    catalog::RepresentationDef rep = add;
    rep.slices.clear();
    st = CreateSlicesFor(engine, *table, &rep, &created);
    if (!st.ok()) break;
    st = BuildIndex(engine, def, rep);
    if (!st.ok()) break;
    def.indexes.push_back(std::move(rep));
  }
  if (st.ok()) st = cat->ReplaceTable(table, std::move(def));
  if (!st.ok()) {
    DropCreatedSlices(engine, created);
    return st;
  }
  for (const auto& rep : dropped) DropRepresentationSlices(engine, *table, rep);
  return Status::OK();
}

}  // namespace

Session::Session(Engine* engine, uint32_t connection_id)
    : engine_(engine), connection_id_(connection_id), variables_(engine->global_variables()) {}

Session::~Session() {
  // A closed connection (or COM_RESET_CONNECTION / COM_CHANGE_USER, which
  // replace the session) rolls back and releases its locks.
  if (txn_) txn_->Rollback();
}

namespace {

// Whether running `op` reads or writes table rows.
bool TouchesTables(const planner::PhysicalOperator& op) {
  using planner::PhysicalKind;
  switch (op.kind) {
    case PhysicalKind::kPointGet:
    case PhysicalKind::kSliceScan:
    case PhysicalKind::kIndexScan:
    case PhysicalKind::kInsert:
    case PhysicalKind::kUpdate:
    case PhysicalKind::kDelete: return true;
    case PhysicalKind::kApply:
      if (op.correlated) return true;
      break;
    default: break;
  }
  for (const auto& c : op.children) {
    if (TouchesTables(*c)) return true;
  }
  return false;
}

std::string UpperText(const Value& v) {
  std::string t = v.is_null() ? "" : v.ToText();
  for (char& c : t) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return t;
}

// Checks and normalizes a value for the transaction variables; other
// variables pass unchanged.
Status NormalizeTxnVariable(const std::string& name, Value* v) {
  auto wrong = [&]() {
    return SqlError(ErrorCode::kWrongValueForVar, "Variable '{}' can't be set to the value of '{}'", name,
                    v->is_null() ? std::string("NULL") : v->ToText());
  };
  if (name == "transaction_isolation" || name == "tx_isolation") {
    txn::Isolation level;
    if (!v->is_string() || !txn::ParseIsolation(v->as_string(), &level)) return wrong();
    *v = Value::String(txn::IsolationName(level));
  } else if (name == "transaction_read_only" || name == "tx_read_only" || name == "unique_checks" ||
             name == "foreign_key_checks") {
    std::string t = UpperText(*v);
    if (t == "1" || t == "ON" || t == "TRUE") {
      *v = Value::Int(1);
    } else if (t == "0" || t == "OFF" || t == "FALSE") {
      *v = Value::Int(0);
    } else {
      return wrong();
    }
  } else if (name == "innodb_lock_wait_timeout") {
    if (!v->is_int() || v->as_int() < 1 || v->as_int() > 1073741824) return wrong();
  } else if (name == "shale_query_memory_limit") {
    if (!v->is_int() || v->as_int() < 0) return wrong();
  }
  return Status::OK();
}

// The other name of a transaction variable (MySQL 5.7's tx_* aliases).
std::string AliasOf(const std::string& name) {
  if (name == "transaction_isolation") return "tx_isolation";
  if (name == "tx_isolation") return "transaction_isolation";
  if (name == "transaction_read_only") return "tx_read_only";
  if (name == "tx_read_only") return "transaction_read_only";
  return "";
}

}  // namespace

namespace {
// "1"/"ON" and the like for a switch variable; absent or NULL: on.
bool SwitchOn(const std::map<std::string, Value>& vars, const char* name) {
  auto it = vars.find(name);
  if (it == vars.end() || it->second.is_null()) return true;
  if (it->second.is_int()) return it->second.as_int() != 0;
  const std::string v = it->second.ToText();
  return !(v == "0" || v == "OFF" || v == "off" || v == "Off");
}
}  // namespace

const Session::DerivedSettings& Session::Derived() const {
  if (derived_) return *derived_;
  DerivedSettings d;
  auto find = [&](const char* name) -> const Value* {
    auto it = variables_.find(name);
    return it == variables_.end() ? nullptr : &it->second;
  };
  if (const Value* v = find("autocommit")) d.autocommit = sierra::IsTrue(*v);
  d.plan_cache = SwitchOn(variables_, "shale_plan_cache");
  d.pushdown = SwitchOn(variables_, "shale_pushdown");
  if (const Value* v = find("sql_mode"); v != nullptr && !v->is_null()) {
    std::string mode = v->ToText();
    for (char& c : mode) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    d.sql_mode = std::move(mode);
  }
  if (const Value* v = find("time_zone"); v != nullptr && !v->is_null()) ParseTimeZone(v->ToText(), &d.zone);
  if (const Value* v = find("innodb_lock_wait_timeout"); v != nullptr && v->is_int()) {
    d.lock_wait_timeout = std::chrono::milliseconds(v->as_int() * 1000);
  }
  if (const Value* v = find("shale_query_memory_limit"); v != nullptr && v->is_int()) {
    d.query_memory_limit = v->as_int();
  }
  if (const Value* v = find("transaction_isolation"); v != nullptr && v->is_string()) {
    (void)txn::ParseIsolation(v->as_string(), &d.txn_options.isolation);
  }
  if (const Value* v = find("transaction_read_only")) d.txn_options.read_only = sierra::IsTrue(*v);
  derived_ = std::move(d);
  return *derived_;
}

txn::TxnOptions Session::SessionTxnOptions() const { return Derived().txn_options; }

txn::TxnOptions Session::TakeNextTxnOptions() {
  txn::TxnOptions o = next_txn_ ? *next_txn_ : SessionTxnOptions();
  next_txn_.reset();
  return o;
}

std::chrono::milliseconds Session::LockWaitTimeout() const { return Derived().lock_wait_timeout; }

Status Session::CommitChecked(txn::Transaction* t, const WrittenTables& tables) {
  // DDL holds a table's write mutex while it changes the table; a commit
  // holds the mutexes of the tables it wrote shared (in id order) while it
  // checks that their definitions are the ones it wrote with, and writes.
  std::vector<std::shared_lock<WriterFirstSharedMutex>> held;
  for (const auto& [id, def] : tables) held.emplace_back(engine_->TableWriteMutex(id));
  for (const auto& [id, def] : tables) {
    auto current = engine_->catalog()->GetTable(def->db, def->name);
    if (!current.ok() || *current != def) {
      t->Rollback();
      if (current.ok() && catalog::OnlyPlacementDiffers(**current, *def)) {
        // The rebalancer moved replicas: the writes were routed by the old
        // slice map. Nothing was written; the retryable "cluster changed".
        return SqlError(ErrorCode::kUnknownCom,
                        "Cluster metadata changed while the statement ran (the slice map of {}.{} changed); the "
                        "statement was not run, retry it",
                        def->db, def->name);
      }
      return SqlError(ErrorCode::kTableDefChanged, "Table definition has changed, please retry transaction");
    }
    if (Status fenced = CheckNotFenced(**current); !fenced.ok()) {
      t->Rollback();  // an online DDL is changing the table: nothing is written
      return fenced;
    }
  }
  return t->Commit();
}

Status Session::EndTransaction() {
  if (!txn_) return Status::OK();
  std::unique_ptr<txn::Transaction> t = std::move(txn_);
  WrittenTables tables = std::move(txn_tables_);
  txn_tables_.clear();
  return CommitChecked(t.get(), tables);
}

void Session::RollbackTransaction() {
  if (txn_) txn_->Rollback();
  txn_.reset();
  txn_tables_.clear();
}

Result<StatementResult> Session::RunInTransaction(const std::function<Result<StatementResult>()>& run, bool writes,
                                                  std::optional<txn::LockMode> locking, bool own_transaction) {
  if (!txn_ && !autocommit() && !own_transaction) txn_ = engine_->txn()->Begin(TakeNextTxnOptions());
  std::unique_ptr<txn::Transaction> statement_txn;
  WrittenTables statement_tables;
  txn::Transaction* t = own_transaction ? nullptr : txn_.get();
  WrittenTables* tables = &txn_tables_;
  if (!t) {
    statement_txn = engine_->txn()->Begin(own_transaction ? SessionTxnOptions() : TakeNextTxnOptions());
    t = statement_txn.get();
    tables = &statement_tables;
  }
  if (writes && t->read_only()) {
    return SqlError(ErrorCode::kCantExecuteInReadOnlyTransaction,
                    "Cannot execute statement in a READ ONLY transaction.");
  }
  // SERIALIZABLE: plain SELECTs in a transaction read with shared locks.
  if (!locking && !writes && txn_ && t->isolation() == txn::Isolation::kSerializable) {
    locking = txn::LockMode::kShared;
  }
  t->BeginStatement();
  StatementContext context;
  context.txn = t;
  context.locking_read = locking;
  context.lock_wait_timeout = LockWaitTimeout();
  context.interrupt = &interrupted_;
  context.written_tables = tables;
  context.strict_mode = StrictSqlMode();
  context.division_by_zero_error = context.strict_mode && SqlModeHas("ERROR_FOR_DIVISION_BY_ZERO");
  MemoryBudget memory(Derived().query_memory_limit);
  context.memory = &memory;
  context.spill_dir = engine_->options().data_dir + "/tmp";
  context.pushdown = PushdownEnabled();
  Result<StatementResult> r = [&] {
    StatementScope scope(&context);
    return run();
  }();
  last_query_memory_peak_.store(memory.peak(), std::memory_order_relaxed);
  if (!r.ok()) {
    if ((r.status().mysql_code() == static_cast<uint16_t>(ErrorCode::kLockDeadlock) ||
         txn::IsRetryableClusterError(r.status())) &&
        t == txn_.get()) {
      // The deadlock victim's whole transaction (InnoDB); likewise a
      // transaction the cluster changed under (a node holding its locks or
      // replicas died): it is rolled back everywhere and the client retries.
      RollbackTransaction();
    } else {
      t->RollbackStatement();  // only this statement's changes
    }
    return r;
  }
  if (statement_txn) SHALE_RETURN_IF_ERROR(CommitChecked(statement_txn.get(), statement_tables));
  return r;
}

bool Session::autocommit() const { return Derived().autocommit; }

Status Session::SetCurrentDatabase(std::string_view db) {
  std::string name(db);
  if (!engine_->catalog()->DatabaseExists(name)) {
    return SqlError(ErrorCode::kBadDb, "Unknown database '{}'", name);
  }
  current_db_ = std::move(name);
  return Status::OK();
}

namespace {
// Replaces every TIMESTAMP value (UTC inside) by the DATETIME of its local
// time in the thread's zone, which is how the client sees it.
void LocalizeTimestamps(std::vector<Row>* rows) {
  for (Row& row : *rows) {
    for (Value& v : row) {
      if (!v.is_temporal() || v.as_temporal().type != TypeId::kTimestamp) continue;
      v = Value::Temporal(TypeId::kDatetime, PackDateTime(TemporalFields(v)), v.as_temporal().fsp);
    }
  }
}

// The OK packet's info text, as MySQL writes it, once the statement's
// warnings are counted: "Records: 3  Duplicates: 0  Warnings: 0" for an
// INSERT/REPLACE of several rows or of a SELECT (none for one row), and the
// real warning count in texts the executor wrote ("Rows matched: ...").
void SetOkInfo(const ast::Statement& stmt, StatementResult* r) {
  if (r->is_result_set) return;
  if (const auto* insert = std::get_if<ast::InsertStmt>(&stmt)) {
    if (insert->select != nullptr || insert->rows.size() + (insert->value_rows ? insert->value_rows->size() : 0) > 1) {
      r->info = fmt::format("Records: {}  Duplicates: {}  Warnings: {}", r->records, r->duplicates, r->warnings);
    }
    return;
  }
  constexpr std::string_view kNoWarnings = "Warnings: 0";
  if (r->warnings > 0 && r->info.size() >= kNoWarnings.size() &&
      r->info.compare(r->info.size() - kNoWarnings.size(), kNoWarnings.size(), kNoWarnings) == 0) {
    r->info.resize(r->info.size() - kNoWarnings.size());
    r->info += fmt::format("Warnings: {}", r->warnings);
  }
}
}  // namespace

namespace {
struct PathTotals {
  std::atomic<uint64_t> reads{0}, read_rounds{0}, writes{0}, write_rounds{0}, write_synced_writes{0};
};
PathTotals g_paths;

// Adds what a statement waited for (`path`) to its kind's totals.
void CountPath(const ast::Statement& stmt, const critical_path::PathCounts& path) {
  if (std::holds_alternative<ast::SelectStmt>(stmt)) {
    g_paths.reads.fetch_add(1, std::memory_order_relaxed);
    g_paths.read_rounds.fetch_add(path.rounds, std::memory_order_relaxed);
  } else if (std::holds_alternative<ast::InsertStmt>(stmt) || std::holds_alternative<ast::UpdateStmt>(stmt) ||
             std::holds_alternative<ast::DeleteStmt>(stmt)) {
    g_paths.writes.fetch_add(1, std::memory_order_relaxed);
    g_paths.write_rounds.fetch_add(path.rounds, std::memory_order_relaxed);
    g_paths.write_synced_writes.fetch_add(path.synced_writes, std::memory_order_relaxed);
  }
}
}  // namespace

Session::PathStats Session::StatementPaths() {
  PathStats s;
  s.reads = g_paths.reads.load(std::memory_order_relaxed);
  s.read_rounds = g_paths.read_rounds.load(std::memory_order_relaxed);
  s.writes = g_paths.writes.load(std::memory_order_relaxed);
  s.write_rounds = g_paths.write_rounds.load(std::memory_order_relaxed);
  s.write_synced_writes = g_paths.write_synced_writes.load(std::memory_order_relaxed);
  return s;
}

std::vector<Result<StatementResult>> Session::Execute(std::string_view sql) {
  std::vector<Result<StatementResult>> results;
  interrupted_.store(false, std::memory_order_relaxed);
  // A cached statement (plan_cache.h) is not parsed: its statement and plan
  // come from the cache.
  std::shared_ptr<const ast::Statement> cached = LookUpPlanCache(sql);
  sql::Parser parser(cached ? std::string_view() : sql);
  while (true) {
    Result<std::optional<ast::Statement>> next = std::optional<ast::Statement>();
    if (!cached) next = parser.Next();
    if (!next.ok()) {
      warnings_ = {{"Error", next.status().mysql_code(), next.status().message()}};
      results.emplace_back(next.status());
      break;
    }
    if (!cached && !next->has_value()) break;
    const ast::Statement& stmt = cached ? *cached : **next;
    bool is_show_warnings = std::holds_alternative<ast::ShowStmt>(stmt) &&
                            std::get<ast::ShowStmt>(stmt).kind == ast::ShowStmt::Kind::kWarnings;
    std::vector<Warning> previous = std::move(warnings_);
    warnings_.clear();
    // Warnings raised while evaluating (1365 division by zero, 1265 ...).
    std::vector<SqlWarning> raised;
    const critical_path::PathCounts path_before = critical_path::This();
    Result<StatementResult> result = [&] {
      ScopedWarningSink sink(&raised);
      ScopedUserVariables user_variables(&user_variables_);
      ScopedTemporalContext clock(StatementClock());
      Result<StatementResult> r = ExecuteRetrying(stmt, is_show_warnings ? previous : std::vector<Warning>{}, &raised,
                                                  cached ? sql : std::string_view());
      // TIMESTAMPs leave the session as local times of its time_zone.
      if (r.ok()) LocalizeTimestamps(&r->rows);
      return r;
    }();
    CountPath(stmt, critical_path::This() - path_before);
    if (is_show_warnings) warnings_ = std::move(previous);
    for (SqlWarning& w : raised) warnings_.push_back({std::move(w.level), w.code, std::move(w.message)});
    if (!result.ok()) {
      row_count_ = -1;
      warnings_ = {{"Error", result.status().mysql_code(), result.status().message()}};
      if (result.status().code() != StatusCode::kSqlError) {
        log::Warn("connection {}: statement failed: {}", connection_id_, result.status().ToString());
      }
      results.push_back(std::move(result));
      break;
    }
    result->warnings = static_cast<uint16_t>(warnings_.size());
    // CLIENT_FOUND_ROWS: UPDATE counts the rows matched (ROW_COUNT() too).
    if (client_found_rows_ && result->found_rows.has_value()) result->affected_rows = *result->found_rows;
    SetOkInfo(stmt, &*result);
    row_count_ = result->is_result_set ? -1 : static_cast<int64_t>(result->affected_rows);
    results.push_back(std::move(result));
    AfterStatementForPlanCache(stmt);
    if (cached) break;  // one statement
  }
  cached_plan_.reset();
  return results;
}

TemporalContext Session::StatementClock() const {
  TemporalContext ctx = Derived().zone;
  ctx.now_micros = WallClockMicros();
  return ctx;
}

Result<StatementResult> Session::ExecuteStatement(const ast::Statement& stmt,
                                                  const std::vector<Warning>& shown_warnings) {
  Count(stmt);
  // A node cut off from the cluster's majority runs only what touches no
  // replicated data (docs/cluster.md, "Quorum").
  if (const ClusterHooks& cluster = engine_->cluster_hooks();
      cluster.check_quorum && !sql::ServableWithoutQuorum(stmt, current_db_)) {
    SHALE_RETURN_IF_ERROR(cluster.check_quorum());
  }
  if (const auto* admin = std::get_if<ast::AdminStmt>(&stmt)) return ExecuteAdmin(*admin);
  SHALE_RETURN_IF_ERROR(CheckPrivileges(stmt));
  // TRUNCATE TABLE system.profile starts the module profile's figures again.
  if (const auto* del = std::get_if<ast::DeleteStmt>(&stmt);
      del != nullptr && del->truncate && del->table.name.table == "profile" &&
      sql::IsSystemDb(del->table.name.db.empty() ? current_db_ : del->table.name.db)) {
    profile::Reset();
    return StatementResult{};
  }
  // Shared, not copied: a statement reads the globals as of its start.
  const std::shared_ptr<const std::map<std::string, Value>> globals = engine_->GlobalVariablesSnapshot();
  sql::BindContext ctx = MakeBindContext(globals.get());
  std::optional<uint64_t> set_last_insert_id;
  ctx.set_last_insert_id = &set_last_insert_id;
  for (const Warning& w : shown_warnings) {
    ctx.warnings.push_back({Value::String(w.level), Value::Int(w.code), Value::String(w.message)});
  }
  // A plan from the plan cache (Execute) stands for the bind.
  SHALE_ASSIGN_OR_RETURN(sql::BoundStatement bound,
                         cached_plan_ ? Result<sql::BoundStatement>(sql::PlanCmd{std::move(cached_plan_)})
                                      : sql::Bind(stmt, ctx));
  if (const auto* plan = std::get_if<sql::PlanCmd>(&bound)) {
    SHALE_RETURN_IF_ERROR(CheckPlanPrivileges(*plan->plan));
  }
  if (const auto* explain = std::get_if<sql::ExplainCmd>(&bound)) {
    SHALE_RETURN_IF_ERROR(CheckPlanPrivileges(*explain->plan));
  }
  if (const auto* set = std::get_if<sql::SetCmd>(&bound); set != nullptr && set->user_values) {
    SHALE_RETURN_IF_ERROR(CheckPlanPrivileges(*set->user_values));
  }
  Result<StatementResult> result = ExecuteBound(stmt, &bound);
  if (result.ok()) {
    Status after = AfterAutoIncrementStatement(stmt);
    if (!after.ok()) result = after;
  }
  // An AUTO_INCREMENT value the statement generated is LAST_INSERT_ID()
  // from now on (it wins over LAST_INSERT_ID(expr) in the same statement,
  // as in MariaDB); LAST_INSERT_ID(expr) is remembered once its statement
  // succeeded, and is that statement's insert id.
  if (result.ok() && result->generated_insert_id != 0) {
    last_insert_id_ = result->generated_insert_id;
    result->last_insert_id = last_insert_id_;
  } else if (result.ok() && set_last_insert_id.has_value()) {
    last_insert_id_ = *set_last_insert_id;
    if (!result->is_result_set) result->last_insert_id = last_insert_id_;
  }
  return result;
}

bool Session::StrictSqlMode() const {
  return SqlModeHas("STRICT_TRANS_TABLES") || SqlModeHas("STRICT_ALL_TABLES");
}

bool Session::SqlModeHas(std::string_view flag) const {
  const std::optional<std::string>& sql_mode = Derived().sql_mode;
  if (!sql_mode) return true;  // the default has every flag asked for
  const std::string& mode = *sql_mode;
  // SET sql_mode = TRADITIONAL is kept as written; it implies the strict
  // flags and ERROR_FOR_DIVISION_BY_ZERO.
  return mode.find(flag) != std::string::npos || mode.find("TRADITIONAL") != std::string::npos;
}

Status Session::AfterAutoIncrementStatement(const ast::Statement& stmt) {
  // TRUNCATE starts the AUTO_INCREMENT values again at 1 (as InnoDB).
  const auto* del = std::get_if<ast::DeleteStmt>(&stmt);
  if (del == nullptr || !del->truncate) return Status::OK();
  const std::string db = del->table.name.db.empty() ? current_db_ : del->table.name.db;
  return ResetAutoIncrement(engine_, db, del->table.name.table);
}

sql::BindContext Session::MakeBindContext(const std::map<std::string, Value>* globals) const {
  sql::BindContext ctx;
  ctx.catalog = engine_->catalog();
  ctx.system_table = SystemTables(engine_);
  ctx.current_db = current_db_;
  ctx.variables = &variables_;
  ctx.global_variables = globals;
  ctx.connection_id = connection_id_;
  ctx.user = user_.user + "@" + user_.address;
  ctx.user_variables = &user_variables_;
  ctx.row_count = row_count_;
  ctx.found_rows = found_rows_;
  ctx.last_insert_id = last_insert_id_;
  ctx.info_schema = InfoSchema();
  return ctx;
}

Result<StatementResult> Session::ExecuteCalcFoundRows(const sierra::LogicalOperator& plan) {
  // The LIMIT is the root of a bound query; run what is below it.
  const bool limited = plan.kind == sierra::LogicalKind::kLimit && plan.children.size() == 1;
  const sierra::LogicalOperator& all = limited ? *plan.children[0] : plan;
  SHALE_ASSIGN_OR_RETURN(auto physical, planner::Plan(all));
  InterruptScope interrupt_scope(&interrupted_);
  auto run = [&]() { return ExecutePlan(engine_, *physical); };
  Result<StatementResult> result = TouchesTables(*physical)
                                       ? RunInTransaction(run, false, std::nullopt, /*own_transaction=*/false)
                                       : ExecutePlan(engine_, *physical);
  SHALE_ASSIGN_OR_RETURN(StatementResult r, std::move(result));
  found_rows_ = r.rows.size();
  if (limited) {
    const uint64_t begin = std::min<uint64_t>(plan.offset, r.rows.size());
    const uint64_t end = begin + std::min<uint64_t>(plan.limit, r.rows.size() - begin);
    r.rows = std::vector<Row>(std::make_move_iterator(r.rows.begin() + static_cast<ptrdiff_t>(begin)),
                              std::make_move_iterator(r.rows.begin() + static_cast<ptrdiff_t>(end)));
  }
  return r;
}

Result<StatementResult> Session::ExecuteBound(const ast::Statement& stmt, sql::BoundStatement* bound_statement) {
  sql::BoundStatement& bound = *bound_statement;
  const auto* show = std::get_if<ast::ShowStmt>(&stmt);
  const auto* select = std::get_if<ast::SelectStmt>(&stmt);

  return std::visit(
      [&](auto& cmd) -> Result<StatementResult> {
        using T = std::decay_t<decltype(cmd)>;
        if constexpr (std::is_same_v<T, sql::PlanCmd>) {
          // In a UNION the first SELECT's SQL_CALC_FOUND_ROWS counts for the whole.
          if (select != nullptr && (select->calc_found_rows || (!select->union_terms.empty() &&
                                                                select->union_terms[0].calc_found_rows))) {
            return ExecuteCalcFoundRows(*cmd.plan);
          }
          SHALE_ASSIGN_OR_RETURN(auto physical, planner::Plan(*cmd.plan, PlanOptionsOf()));
          bool writes = cmd.plan->kind == sierra::LogicalKind::kInsert ||
                        cmd.plan->kind == sierra::LogicalKind::kUpdate ||
                        cmd.plan->kind == sierra::LogicalKind::kDelete;
          InterruptScope interrupt_scope(&interrupted_);
          std::optional<txn::LockMode> locking;
          if (select != nullptr) {
            if (select->lock == ast::SelectStmt::LockMode::kUpdate) locking = txn::LockMode::kExclusive;
            if (select->lock == ast::SelectStmt::LockMode::kShare) locking = txn::LockMode::kShared;
          }
          auto run = [&]() { return ExecutePlan(engine_, *physical); };
          Result<StatementResult> result = TouchesTables(*physical)
                                               ? RunInTransaction(run, writes, locking, /*own_transaction=*/false)
                                               : ExecutePlan(engine_, *physical);
          SHALE_ASSIGN_OR_RETURN(StatementResult r, std::move(result));
          if (show != nullptr) FilterShown(*show, &r);
          if (select != nullptr) found_rows_ = r.rows.size();
          return r;
        } else if constexpr (std::is_same_v<T, sql::CreateDatabaseCmd>) {
          SHALE_RETURN_IF_ERROR(EndTransaction());  // DDL commits implicitly
          bool created = false;
          SHALE_RETURN_IF_ERROR(engine_->catalog()->CreateDatabase(cmd.name, cmd.if_not_exists, &created));
          if (!created) {
            warnings_.push_back({"Note", static_cast<uint16_t>(ErrorCode::kDbCreateExists),
                                 fmt::format("Can't create database '{}'; database exists", cmd.name)});
          }
          return Ok(created ? 1 : 0);
        } else if constexpr (std::is_same_v<T, sql::DropDatabaseCmd>) {
          SHALE_RETURN_IF_ERROR(EndTransaction());
          std::vector<std::shared_ptr<const catalog::TableDef>> dropped;
          bool existed = engine_->catalog()->DatabaseExists(cmd.name);
          // Applying the drop removes every node's replicas.
          SHALE_RETURN_IF_ERROR(engine_->catalog()->DropDatabase(cmd.name, cmd.if_exists, &dropped));
          if (!existed) {
            warnings_.push_back({"Note", static_cast<uint16_t>(ErrorCode::kDbDropExists),
                                 fmt::format("Can't drop database '{}'; database doesn't exist", cmd.name)});
          }
          if (existed && current_db_ == cmd.name) current_db_.clear();
          return Ok(dropped.size());
        } else if constexpr (std::is_same_v<T, sql::UseCmd>) {
          current_db_ = cmd.db;
          return Ok();
        } else if constexpr (std::is_same_v<T, sql::CreateTableCmd>) {
          SHALE_RETURN_IF_ERROR(EndTransaction());
          bool existed = engine_->catalog()->GetTable(cmd.def.db, cmd.def.name).ok();
          std::string name = cmd.def.name;
          std::string db = cmd.def.db;
          sierra::LogicalPtr as_select = std::move(cmd.as_select);
          const std::optional<int64_t> first_auto_increment = cmd.auto_increment;
          SHALE_RETURN_IF_ERROR(RunCreateTable(engine_, std::move(cmd)));
          if (first_auto_increment && !existed) {
            SHALE_RETURN_IF_ERROR(StartAutoIncrement(engine_, db, name, *first_auto_increment));
          }
          if (as_select && !existed) {
            // CREATE TABLE ... AS SELECT: insert the query's rows (a NULL
            // hidden row id gets a fresh one); on failure the table goes.
            SHALE_ASSIGN_OR_RETURN(auto table, engine_->catalog()->GetTable(db, name));
            std::vector<sierra::ExprPtr> exprs;
            for (size_t i = 0; i < as_select->columns.size(); ++i) {
              const sierra::ColumnInfo& c = as_select->columns[i];
              exprs.push_back(sierra::Expr::ColumnRef(static_cast<int>(i), c.name, c.type, c.nullable));
            }
            exprs.push_back(sierra::Expr::Constant(Value::Null()));
            auto scan = sierra::LogicalOperator::Scan(table, "");
            auto insert = sierra::LogicalOperator::Insert(
                table, sierra::LogicalOperator::Project(std::move(as_select), std::move(exprs), scan->columns));
            auto physical = planner::Plan(*insert);
            auto run = [&]() { return ExecutePlan(engine_, **physical); };
            Result<StatementResult> inserted =
                physical.ok() ? RunInTransaction(run, /*writes=*/true, std::nullopt, /*own_transaction=*/true)
                              : Result<StatementResult>(physical.status());
            if (!inserted.ok()) {
              (void)engine_->catalog()->DropTable(db, name);
              return inserted.status();
            }
            StatementResult r = Ok(inserted->affected_rows);
            r.info = fmt::format("Records: {}  Duplicates: 0  Warnings: 0", inserted->affected_rows);
            return r;
          }
          if (existed) {
            warnings_.push_back({"Note", static_cast<uint16_t>(ErrorCode::kTableExists),
                                 fmt::format("Table '{}' already exists", name)});
          }
          return Ok();
        } else if constexpr (std::is_same_v<T, sql::DropTableCmd>) {
          SHALE_RETURN_IF_ERROR(EndTransaction());
          // MySQL checks every table first and drops none if one is missing.
          std::string missing;
          for (const auto& [db, name] : cmd.tables) {
            if (!engine_->catalog()->GetTable(db, name).ok()) {
              missing += (missing.empty() ? "" : ",") + db + "." + name;
            }
          }
          if (!missing.empty() && !cmd.if_exists) {
            return SqlError(ErrorCode::kBadTable, "Unknown table '{}'", missing);
          }
          for (const auto& [db, name] : cmd.tables) {
            auto table = engine_->catalog()->GetTable(db, name);
            if (!table.ok()) {
              warnings_.push_back({"Note", static_cast<uint16_t>(ErrorCode::kBadTable),
                                   fmt::format("Unknown table '{}.{}'", db, name)});
              continue;
            }
            SHALE_RETURN_IF_ERROR(engine_->catalog()->DropTable(db, name));
          }
          return Ok();
        } else if constexpr (std::is_same_v<T, sql::ExplainCmd>) {
          SHALE_ASSIGN_OR_RETURN(auto physical, planner::Plan(*cmd.plan, PlanOptionsOf()));
          if (cmd.analyze) return ExplainAnalyze(*physical);
          return ExplainPlan(engine_, *physical, cmd.tree, PushdownEnabled());
        } else if constexpr (std::is_same_v<T, sql::AlterTableCmd>) {
          SHALE_RETURN_IF_ERROR(EndTransaction());
          if (cmd.new_def) {
            SHALE_RETURN_IF_ERROR(RunAlterColumns(engine_, cmd));
          } else if (!cmd.add_indexes.empty() || !cmd.drop_indexes.empty()) {
            SHALE_RETURN_IF_ERROR(RunAlterTable(engine_, cmd));
          }
          if (cmd.auto_increment) {
            SHALE_RETURN_IF_ERROR(AlterAutoIncrement(engine_, cmd.db, cmd.table, *cmd.auto_increment));
          }
          if (cmd.rename_to) {
            SHALE_RETURN_IF_ERROR(engine_->catalog()->RenameTable(cmd.db, cmd.table, cmd.rename_to->first,
                                                                  cmd.rename_to->second));
          }
          return Ok();
        } else if constexpr (std::is_same_v<T, sql::RenameTableCmd>) {
          SHALE_RETURN_IF_ERROR(EndTransaction());
          for (const auto& [from, to] : cmd.renames) {
            SHALE_RETURN_IF_ERROR(engine_->catalog()->RenameTable(from.first, from.second, to.first, to.second));
          }
          return Ok();
        } else if constexpr (std::is_same_v<T, sql::SetCmd>) {
          for (const auto& [name, value] : cmd.assignments) {
            if (Engine::IsReadOnlyVariable(name)) {
              return SqlError(ErrorCode::kIncorrectGlobalLocalVar,
                              "Variable '{}' is a read only variable", name);
            }
          }
          for (auto* list : {&cmd.global_assignments, &cmd.assignments, &cmd.next_transaction}) {
            for (auto& [name, value] : *list) SHALE_RETURN_IF_ERROR(NormalizeTxnVariable(name, &value));
          }
          if (!cmd.next_transaction.empty()) {
            if (txn_) {
              return SqlError(ErrorCode::kCantChangeTxCharacteristics,
                              "Transaction characteristics can't be changed while a transaction is in progress");
            }
            txn::TxnOptions next = next_txn_ ? *next_txn_ : SessionTxnOptions();
            for (const auto& [name, value] : cmd.next_transaction) {
              if (name == "transaction_isolation") (void)txn::ParseIsolation(value.as_string(), &next.isolation);
              if (name == "transaction_read_only") next.read_only = sierra::IsTrue(value);
            }
            next_txn_ = next;
          }
          // User variables first: their values are computed by a query,
          // which may fail, and then nothing is set.
          std::map<std::string, Value> user_values;
          if (cmd.user_values) {
            SHALE_ASSIGN_OR_RETURN(auto physical, planner::Plan(*cmd.user_values));
            InterruptScope interrupt_scope(&interrupted_);
            auto run = [&]() { return ExecutePlan(engine_, *physical); };
            Result<StatementResult> result = TouchesTables(*physical)
                                                 ? RunInTransaction(run, false, std::nullopt, /*own_transaction=*/false)
                                                 : ExecutePlan(engine_, *physical);
            SHALE_ASSIGN_OR_RETURN(StatementResult r, std::move(result));
            if (r.rows.size() != 1 || r.rows[0].size() != cmd.user_variables.size()) {
              return Status::Internal("SET @variable: the value query did not give one row");
            }
            for (size_t i = 0; i < cmd.user_variables.size(); ++i) {
              user_values[cmd.user_variables[i]] = std::move(r.rows[0][i]);
            }
          }
          for (const auto* list : {&cmd.assignments, &cmd.global_assignments}) {
            for (const auto& [name, value] : *list) {
              TemporalContext zone;
              if (name == "time_zone" && (value.is_null() || !ParseTimeZone(value.ToText(), &zone))) {
                return SqlError(ErrorCode::kUnknownTimeZone, "Unknown or incorrect time zone: '{}'",
                                value.ToText());
              }
            }
          }
          for (auto& [name, value] : cmd.global_assignments) {
            SHALE_RETURN_IF_ERROR(engine_->SetGlobalVariable(name, value));
            std::string alias = AliasOf(name);
            if (!alias.empty()) SHALE_RETURN_IF_ERROR(engine_->SetGlobalVariable(alias, value));
          }
          for (auto& [name, value] : user_values) user_variables_[name] = std::move(value);
          for (auto& [name, value] : cmd.assignments) {
            if (name == "autocommit" && sierra::IsTrue(value) && !autocommit()) {
              SHALE_RETURN_IF_ERROR(EndTransaction());  // turning autocommit on commits
            }
            std::string alias = AliasOf(name);
            if (!alias.empty()) StoreVariable(alias, value);
            StoreVariable(name, value);
          }
          return Ok();
        } else {
          static_assert(std::is_same_v<T, sql::TransactionCmd>);
          using Kind = ast::TransactionStmt::Kind;
          if (cmd.kind == Kind::kSavepoint) {
            // With autocommit off a transaction is open implicitly (the
            // savepoint belongs to it); with autocommit on and none open the
            // statement's own implicit commit drops the savepoint at once,
            // so it succeeds and leaves nothing (as MySQL).
            if (!txn_ && !autocommit()) txn_ = engine_->txn()->Begin(TakeNextTxnOptions());
            if (txn_) txn_->SetSavepoint(cmd.savepoint);
            return Ok();
          }
          if (cmd.kind == Kind::kRollbackTo || cmd.kind == Kind::kRelease) {
            if (!txn_) return SqlError(ErrorCode::kSpDoesNotExist, "SAVEPOINT {} does not exist", cmd.savepoint);
            SHALE_RETURN_IF_ERROR(cmd.kind == Kind::kRollbackTo ? txn_->RollbackToSavepoint(cmd.savepoint)
                                                                : txn_->ReleaseSavepoint(cmd.savepoint));
            return Ok();
          }
          if (cmd.kind == Kind::kRollback) {
            RollbackTransaction();
            return Ok();
          }
          // COMMIT; BEGIN commits the open transaction first (as MySQL).
          SHALE_RETURN_IF_ERROR(EndTransaction());
          if (cmd.kind == Kind::kBegin) {
            txn::TxnOptions options = TakeNextTxnOptions();
            if (cmd.read_only) options.read_only = true;
            if (cmd.read_write) options.read_only = false;
            txn_ = engine_->txn()->Begin(options);
            if (cmd.consistent_snapshot) SHALE_RETURN_IF_ERROR(txn_->TakeSnapshot());
          }
          return Ok();
        }
      },
      bound);
}


}  // namespace shale::exec

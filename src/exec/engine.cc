#include "src/exec/engine.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <shared_mutex>
#include <set>

#include "shale/version.h"
#include "src/common/errors.h"
#include "src/common/log.h"
#include "src/common/module_profile.h"

namespace shale::exec {
namespace {

// Whether `node` holds a serving replica of `slice` (not a building one).
bool ServesOn(const catalog::SliceDef& slice, const std::string& node) {
  return std::find(slice.replicas.begin(), slice.replicas.end(), node) != slice.replicas.end();
}

// Global system variables and their defaults. Clients read these at connect
// (SELECT @@...) and SHOW VARIABLES lists them.
std::map<std::string, Value> DefaultGlobals(const EngineOptions& o) {
  auto s = [](const char* v) { return Value::String(v); };
  auto i = [](int64_t v) { return Value::Int(v); };
  return {
      {"auto_increment_increment", i(1)},
      {"auto_increment_offset", i(1)},
      {"autocommit", i(1)},
      {"character_set_client", s("utf8mb4")},
      {"character_set_connection", s("utf8mb4")},
      {"character_set_database", s("utf8mb4")},
      {"character_set_results", s("utf8mb4")},
      {"character_set_server", s("utf8mb4")},
      {"character_set_system", s("utf8mb3")},
      {"collation_connection", s("utf8mb4_general_ci")},
      {"collation_database", s("utf8mb4_general_ci")},
      {"collation_server", s("utf8mb4_general_ci")},
      {"default_authentication_plugin", s("mysql_native_password")},
      {"default_storage_engine", s("Shale")},
      // Accepted for dump files (mysqldump sets both to 0 around its
      // inserts); Shale checks unique keys always and has no foreign keys.
      {"foreign_key_checks", i(1)},
      {"have_ssl", s("DISABLED")},
      {"hostname", s(o.node_name.c_str())},
      {"init_connect", s("")},
      {"innodb_lock_wait_timeout", i(50)},
      {"interactive_timeout", i(28800)},
      {"license", s("Proprietary")},
      // LOAD DATA LOCAL INFILE allowed (MySQL 8.0's default is OFF,
      // MariaDB's ON); server-side files never (secure_file_priv NULL).
      {"local_infile", i(1)},
      {"lower_case_table_names", i(0)},
      {"max_allowed_packet", i(64 << 20)},
      {"net_buffer_length", i(16384)},
      {"net_write_timeout", i(60)},
      {"performance_schema", i(0)},
      {"protocol_version", i(10)},
      {"query_cache_size", i(0)},
      {"query_cache_type", s("OFF")},
      {"secure_file_priv", Value::Null()},
      // Bytes of buffered rows one statement may hold (memory_budget.h).
      {"shale_query_memory_limit", i(static_cast<int64_t>(o.query_memory_limit))},
      // The plan cache (src/exec/plan_cache.h): 1 = on, 0 = off (for
      // measuring it; SET GLOBAL shale_plan_cache = 0 for new sessions).
      {"shale_plan_cache", i(1)},
      // The per-module CPU profile (system.profile,
      // src/common/module_profile.h): 1 = sampling, 0 = off (for measuring
      // its cost). shaled starts it; SET GLOBAL turns it on or off.
      {"shale_module_profile", i(profile::Enabled() ? 1 : 0)},
      // Filters and partial aggregates run where the slices are
      // (src/exec/pushdown.h): 1 = on, 0 = off (every row of a remote slice
      // travels; for comparing). Default: 1.
      {"shale_pushdown", i(1)},
      // MiB/s this node receives for rebalancer copies; 0 = unlimited
      // (docs/cluster.md "Reprotection and rebalancing").
      {"shale_rebalance_rate_mb", i(o.rebalance_rate_mb)},
      {"sql_mode", s("ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,"
                     "ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION")},
      {"sql_select_limit", i(INT64_MAX)},
      {"system_time_zone", s("UTC")},
      {"time_zone", s("SYSTEM")},
      {"transaction_isolation", s("REPEATABLE-READ")},
      {"unique_checks", i(1)},
      {"transaction_read_only", i(0)},
      {"tx_isolation", s("REPEATABLE-READ")},
      {"tx_read_only", i(0)},
      {"version", s(kServerVersion)},
      {"version_comment", s(kVersionComment)},
      {"version_compile_machine", s("x86_64")},
      {"version_compile_os", s("Linux")},
      {"wait_timeout", i(28800)},
  };
}

}  // namespace

Engine::Engine(EngineOptions options) : options_(std::move(options)) {
  globals_ = std::make_shared<const std::map<std::string, Value>>(DefaultGlobals(options_));
}

Engine::~Engine() {
  // A clean shutdown gives back the id counters' unused reservations, so
  // AUTO_INCREMENT continues where it stopped after a restart.
  if (catalog_) {
    Status st = catalog_->ReleaseUnusedIds();
    if (!st.ok()) log::Warn("engine: saving id counters failed: {}", st.ToString());
  }
}

Result<std::unique_ptr<Engine>> Engine::Open(const EngineOptions& options) {
  if (options.data_dir.empty()) return Status::InvalidArgument("engine: no data directory");
  std::error_code ec;
  std::filesystem::create_directories(options.data_dir, ec);
  if (ec) {
    return Status::IOError(fmt::format("cannot create data directory {}: {}", options.data_dir,
                                       ec.message()));
  }
  // Sort spill runs of a previous process (they are unlinked when made, so
  // normally there are none).
  std::filesystem::remove_all(options.data_dir + "/tmp", ec);
  std::unique_ptr<Engine> engine(new Engine(options));
  SHALE_ASSIGN_OR_RETURN(engine->meta_, storage::MetaStore::Open(options.data_dir + "/meta"));
  SHALE_ASSIGN_OR_RETURN(engine->slices_, storage::SliceStore::Open(options.data_dir + "/slices", options.storage));
  SHALE_ASSIGN_OR_RETURN(engine->txn_, txn::TxnManager::Open(engine->slices_.get(), engine->meta_.get()));
  SHALE_ASSIGN_OR_RETURN(engine->catalog_, catalog::Catalog::Load(engine->meta_.get()));
  SHALE_ASSIGN_OR_RETURN(engine->accounts_, catalog::Accounts::Load(engine->meta_.get()));

  engine->catalog_->SetTableListener(
      [e = engine.get()](catalog::TableChangePhase phase, const catalog::TableDef* before,
                         const catalog::TableDef* after) { e->OnTableChange(phase, before, after); });

  // Every slice this node holds a replica of must exist (a catalog change
  // is written only after its new local slices were made).
  size_t tables = 0, local = 0;
  for (const auto& table : engine->catalog_->AllTables()) {
    ++tables;
    for (const catalog::RepresentationDef* rep : table->StoredRepresentations()) {
      for (const auto& s : rep->slices) {
        if (!engine->HoldsReplica(s)) continue;
        ++local;
        engine->placed_.insert(s.id);
        if (!s.replicas.empty() && s.replicas[0] == options.node_name) engine->ranks_.insert(s.id);
        if (ServesOn(s, options.node_name)) engine->serving_[s.id] = ++engine->serving_seq_;
        if (!engine->slices_->GetSlice(s.id).ok()) {
          return Status::Corruption(fmt::format("slice {} is in the catalog but missing from {}/slices", s.id,
                                                options.data_dir));
        }
      }
    }
  }
  if (!options.defer_orphan_cleanup) SHALE_RETURN_IF_ERROR(engine->ReconcileSlices());
  log::Info("engine open: data directory {}, {} tables, {} local slice replicas", options.data_dir, tables, local);
  return engine;
}

std::vector<std::string> Engine::PlacementNodes() const {
  if (cluster_hooks_.members) {
    std::vector<std::string> names = cluster_hooks_.members();
    if (!names.empty()) return names;
  }
  return {options_.node_name};
}

ProtectionSummary Engine::Protection() const {
  ProtectionSummary p;
  const size_t members = PlacementNodes().size();
  for (const auto& table : catalog_->AllTables()) {
    const size_t wanted = std::min<size_t>(catalog::WantedReplicas(*table), members);
    auto count = [&](const catalog::RepresentationDef& rep) {
      for (const auto& s : rep.slices) {
        ++p.slices;
        if (s.replicas.size() < wanted) ++p.under_protected;
        if (s.replicas.empty()) ++p.lost;
      }
    };
    count(table->primary);
    for (const auto& index : table->indexes) count(index);
  }
  return p;
}

bool Engine::HoldsReplica(const catalog::SliceDef& slice) const { return slice.PlacedOn(options_.node_name); }

Status Engine::ReconcileSlices() {
  // Slices no table refers to were left by a CREATE or DROP that was
  // interrupted; slices of a table whose map does not place a replica here
  // are replicas this node no longer holds (removed while it was down, or
  // moved by the rebalancer): remove them.
  // The stored slices first: a replica the catalog's apply creates after
  // this is not listed, and one created before is published by the time
  // AllTables answers (the apply holds the catalog lock from creating it
  // until it is published).
  const std::vector<storage::SliceId> stored = slices_->ListSlices();
  std::set<storage::SliceId> referenced;
  for (const auto& table : catalog_->AllTables()) {
    for (const catalog::RepresentationDef* rep : table->StoredRepresentations()) {
      for (const auto& s : rep->slices) {
        if (HoldsReplica(s)) referenced.insert(s.id);
      }
    }
  }
  for (storage::SliceId id : stored) {
    if (!referenced.count(id)) {
      log::Warn("dropping orphan slice {} (no replica of it is placed on this node)", id);
      std::unique_lock<std::shared_mutex> no_gc(txn_->slice_drop_mutex());
      SHALE_RETURN_IF_ERROR(slices_->DropSlice(id));
    }
  }
  return Status::OK();
}

void Engine::OnTableChange(catalog::TableChangePhase phase, const catalog::TableDef* before,
                           const catalog::TableDef* after) {
  auto local_slices = [&](const catalog::TableDef* t) {
    std::set<storage::SliceId> out;
    if (t == nullptr) return out;
    auto add = [&](const catalog::RepresentationDef& rep) {
      for (const auto& s : rep.slices) {
        if (HoldsReplica(s)) out.insert(s.id);
      }
    };
    for (const catalog::RepresentationDef* rep : t->StoredRepresentations()) add(*rep);
    return out;
  };
  const std::set<storage::SliceId> had = local_slices(before);
  const std::set<storage::SliceId> has = local_slices(after);
  // Of those, the serving replicas (the others are building).
  auto serving_slices = [&](const catalog::TableDef* t) {
    std::set<storage::SliceId> out;
    if (t == nullptr) return out;
    for (const catalog::RepresentationDef* rep : t->StoredRepresentations()) {
      for (const auto& s : rep->slices) {
        if (ServesOn(s, options_.node_name)) out.insert(s.id);
      }
    }
    return out;
  };
  const std::set<storage::SliceId> served = serving_slices(before);
  const std::set<storage::SliceId> serves = serving_slices(after);
  // Building replicas placed here by `t` (the rebalancer fills them): slice
  // -> task.
  auto building_on_this_node = [&](const catalog::TableDef* t) {
    std::map<storage::SliceId, uint64_t> out;
    if (t == nullptr) return out;
    auto add = [&](const catalog::RepresentationDef& rep) {
      for (const auto& s : rep.slices) {
        for (const auto& b : s.building) {
          if (b.node == options_.node_name) out[s.id] = b.task_id;
        }
      }
    };
    for (const catalog::RepresentationDef* rep : t->StoredRepresentations()) add(*rep);
    return out;
  };
  const std::map<storage::SliceId, uint64_t> building_here = building_on_this_node(after);
  if (phase == catalog::TableChangePhase::kPrepare) {
    // New replicas here: create them (empty) before the catalog names them.
    // One made earlier by the statement itself (an index built before its
    // definition is published) is kept as it is.
    const std::map<storage::SliceId, uint64_t> was_building = building_on_this_node(before);
    for (storage::SliceId id : has) {
      // A build of a task this node did not know yet.
      auto build = building_here.find(id);
      auto known = was_building.find(id);
      const bool new_build =
          build != building_here.end() && (known == was_building.end() || known->second != build->second);
      if (had.count(id) && !new_build) continue;
      // Atomic with DropRetiredSlices (which must not drop the new slice).
      std::lock_guard retired(retired_mu_);
      retired_.erase(id);
      if (new_build && slices_->GetSlice(id).ok()) {
        // A storage slice of that id here is stale (a replica retired from
        // here moments ago, or kept from before this node was removed):
        // the build starts from an empty slice. A statement that routed to
        // it by an older map, before this node applied the change that
        // retired it, may still be about to read it: its read is refused,
        // as the replica it routed to no longer serves (ServingToken; it
        // left serving_ when the retiring change was applied — and here
        // too, in case it never was).
        {
          std::lock_guard placed(placed_mu_);
          serving_.erase(id);
        }
        std::unique_lock<std::shared_mutex> no_gc(txn_->slice_drop_mutex());
        Status st = slices_->DropSlice(id);
        if (!st.ok() && !st.IsNotFound()) log::Warn("drop of stale slice {} failed: {}", id, st.ToString());
      }
      if (slices_->GetSlice(id).ok()) continue;
      // A building replica (the rebalancer fills it) is created in state
      // kBuilding; it takes the commits' writes from now on.
      auto made = building_here.count(id)
                      ? slices_->CreateBuildingSlice(id, catalog::kOpenBuildSnapshot, catalog::SliceOptionsOf(*after))
                      : slices_->CreateSlice(id, catalog::SliceOptionsOf(*after));
      if (!made.ok()) {
        log::Error("slice {} of {}.{}: cannot create this node's replica: {}", id, after->db, after->name,
                   made.status().ToString());
      }
    }
    std::lock_guard placed(placed_mu_);
    placed_.insert(has.begin(), has.end());
    // A new replica here serves reads from now on, with a new incarnation.
    for (storage::SliceId id : serves) {
      if (!serving_.count(id)) serving_[id] = ++serving_seq_;
    }
    return;
  }
  {
    std::lock_guard placed(placed_mu_);
    for (storage::SliceId id : had) {
      if (!has.count(id)) placed_.erase(id);
    }
    for (storage::SliceId id : served) {
      if (!serves.count(id)) serving_.erase(id);
    }
    // A building replica promoted (no kPrepare phase for that) serves from
    // now on, with a new incarnation; one that left serving got none above.
    for (storage::SliceId id : serves) {
      if (!serving_.count(id)) serving_[id] = ++serving_seq_;
    }
    // Which replica ranks is known once the change is applied.
    for (const catalog::TableDef* t : {before, after}) {
      if (t == nullptr) continue;
      for (const catalog::RepresentationDef* rep : t->StoredRepresentations()) {
        for (const auto& s : rep->slices) {
          if (t == after && !s.replicas.empty() && s.replicas[0] == options_.node_name) {
            ranks_.insert(s.id);
          } else if (t == before) {
            ranks_.erase(s.id);
          }
        }
      }
    }
  }
  // Slices that still exist but left this node (moved by the rebalancer, a
  // cancelled build, this node removed): statements that routed to them
  // before the change may still be reading them, so they are dropped a
  // little later (DropRetiredSlices). Slices that are gone (DROP TABLE,
  // DROP INDEX) are dropped now.
  std::set<storage::SliceId> still_exist;
  if (after != nullptr) {
    for (const catalog::RepresentationDef* rep : after->StoredRepresentations()) {
      for (const auto& s : rep->slices) still_exist.insert(s.id);
    }
  }
  {
    std::lock_guard lock(retired_mu_);
    for (storage::SliceId id : had) {
      if (!has.count(id) && still_exist.count(id)) retired_.emplace(id, std::chrono::steady_clock::now());
    }
  }
  std::unique_lock<std::shared_mutex> no_gc(txn_->slice_drop_mutex());
  for (storage::SliceId id : had) {
    if (has.count(id) || still_exist.count(id)) continue;
    Status st = slices_->DropSlice(id);
    if (!st.ok() && !st.IsNotFound()) {
      // An orphan now; the next start removes it.
      log::Warn("drop of slice {} of {}.{} failed: {}", id, before->db, before->name, st.ToString());
    }
  }
}

bool Engine::PlacedHere(storage::SliceId id) const {
  std::lock_guard lock(placed_mu_);
  return placed_.count(id) > 0;
}

bool Engine::RanksHere(storage::SliceId id) const {
  std::lock_guard lock(placed_mu_);
  return ranks_.count(id) > 0;
}

uint64_t Engine::ServingToken(storage::SliceId id) const {
  std::lock_guard lock(placed_mu_);
  auto it = serving_.find(id);
  return it == serving_.end() ? 0 : it->second;
}

void Engine::DropRetiredSlices(std::chrono::milliseconds older_than) {
  {
    std::lock_guard lock(retired_mu_);
    if (retired_.empty()) return;
  }
  // Placed here again since (a build that started over): keep. Read before
  // retired_mu_ is taken (the catalog's apply holds its lock while it takes
  // retired_mu_); a build placed here after this read takes its slice out
  // of retired_ under retired_mu_ first.
  std::set<storage::SliceId> placed;
  for (const auto& table : catalog_->AllTables()) {
    for (const catalog::RepresentationDef* rep : table->StoredRepresentations()) {
      for (const auto& s : rep->slices) {
        if (HoldsReplica(s)) placed.insert(s.id);
      }
    }
  }
  std::lock_guard lock(retired_mu_);
  const auto cutoff = std::chrono::steady_clock::now() - older_than;
  std::vector<storage::SliceId> due;
  for (auto it = retired_.begin(); it != retired_.end();) {
    if (it->second > cutoff) {
      ++it;
      continue;
    }
    if (!placed.count(it->first)) due.push_back(it->first);
    it = retired_.erase(it);
  }
  if (due.empty()) return;
  std::unique_lock<std::shared_mutex> no_gc(txn_->slice_drop_mutex());
  for (storage::SliceId id : due) {
    Status st = slices_->DropSlice(id);
    if (!st.ok() && !st.IsNotFound()) log::Warn("drop of retired slice {} failed: {}", id, st.ToString());
  }
}

std::map<std::string, Value> Engine::global_variables() const {
  std::lock_guard lock(globals_mu_);
  return *globals_;
}

std::shared_ptr<const std::map<std::string, Value>> Engine::GlobalVariablesSnapshot() const {
  std::lock_guard lock(globals_mu_);
  return globals_;
}

bool Engine::IsReadOnlyVariable(const std::string& name) {
  static const std::set<std::string> kReadOnly = {
      "character_set_system", "have_ssl", "hostname", "license", "lower_case_table_names",
      "protocol_version", "system_time_zone", "version", "version_comment",
      "version_compile_machine", "version_compile_os"};
  return kReadOnly.count(name) > 0;
}

Status Engine::SetGlobalVariable(const std::string& name, Value value) {
  std::lock_guard lock(globals_mu_);
  auto it = globals_->find(name);
  if (it == globals_->end()) {
    return SqlError(ErrorCode::kUnknownSystemVariable, "Unknown system variable '{}'", name);
  }
  if (IsReadOnlyVariable(name)) {
    return SqlError(ErrorCode::kIncorrectGlobalLocalVar, "Variable '{}' is a read only variable", name);
  }
  if (name == "shale_module_profile") {
    std::string text = value.is_null() ? "0" : value.ToText();
    for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    const bool on = text != "0" && text != "OFF" && text != "FALSE";
    if (!on) {
      profile::Stop();
    } else if (!profile::Start()) {
      return SqlError(ErrorCode::kUnknownError, "cannot start the module profile's CPU timer");
    }
    value = Value::Int(on ? 1 : 0);
  }
  auto next = std::make_shared<std::map<std::string, Value>>(*globals_);
  (*next)[name] = std::move(value);
  globals_ = std::move(next);
  return Status::OK();
}

Result<txn::SliceHandle> Engine::RouteSlice(const catalog::TableDef& table, const catalog::SliceDef& def) {
  txn::SliceHandle h;
  h.id = def.id;
  txn::DataRouter* router = txn_->router();
  // Writes go to the serving replicas and to the building ones (the
  // rebalancer is filling them); reads only to the ranking replica.
  const std::vector<std::string>& writes_to = def.WriteReplicas();
  const bool only_here =
      router == nullptr || def.replicas.empty() || (writes_to.size() == 1 && writes_to[0] == router->self());
  if (!only_here) {
    h.replicas = &writes_to;
    h.router = router;
    if (def.replicas[0] != router->self()) return h;  // read at the ranking replica's node
  }
  // Which incarnation of this node's replica the statement reads (before the
  // storage slice is looked up: a replica replaced meanwhile has a new one,
  // or none while it is building). Its reads check it is still the one
  // serving here (txn::TxnManager::CheckPlaced).
  if (router != nullptr) h.serving_token = ServingToken(def.id);
  auto slice = slices_->GetSlice(def.id);
  if (!slice.ok()) {
    // The statement's definition of the table is older than this node's
    // storage (a DDL dropped the slice — an abandoned pending index, a
    // dropped index — since the statement read it): the retryable 1047, so
    // an autocommit statement runs again with the new definition.
    log::Warn("slice {} of table {}.{} is not stored on this node: {}", def.id, table.db, table.name,
              slice.status().ToString());
    return SqlError(ErrorCode::kUnknownCom,
                    "Cluster metadata changed while the statement ran (slice {} of table {}.{} is not stored on node "
                    "'{}'); the statement was not run, retry it",
                    def.id, table.db, table.name, options_.node_name);
  }
  h.local = *slice;
  return h;
}

WriterFirstSharedMutex& Engine::TableWriteMutex(uint64_t table_id) {
  std::lock_guard lock(table_mutexes_mu_);
  auto& m = table_mutexes_[table_id];
  if (!m) m = std::make_unique<WriterFirstSharedMutex>();
  return *m;
}

}  // namespace shale::exec

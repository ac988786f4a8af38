#include "src/catalog/catalog.h"

#include <algorithm>
#include <strings.h>

#include "src/catalog/catalog.pb.h"
#include "src/common/errors.h"
#include "src/common/hash.h"

namespace shale::catalog {
namespace {

// MetaStore keys (docs/formats/catalog.md). DO NOT CHANGE.
constexpr std::string_view kDbPrefix = "catalog/db/";
constexpr std::string_view kTablePrefix = "catalog/table/";
constexpr std::string_view kNextIdKey = "catalog/next_id";
constexpr std::string_view kRowIdPrefix = "catalog/row_id/";
// "catalog/rebalance/<20-digit task id>": a RebalanceTask. DO NOT CHANGE.
constexpr std::string_view kTaskPrefix = "catalog/rebalance/";

std::string TaskKey(uint64_t id) { return fmt::format("{}{:020}", kTaskPrefix, id); }

void TaskToPb(const RebalanceTaskDef& t, pb::RebalanceTask* m) {
  m->set_id(t.id);
  m->set_kind(t.kind);
  m->set_table_id(t.table_id);
  m->set_db(t.db);
  m->set_table(t.table);
  m->set_representation(t.representation);
  m->set_slice_id(t.slice_id);
  m->set_source(t.source);
  m->set_target(t.target);
  m->set_drop_from(t.drop_from);
  m->set_state(t.state);
  m->set_bytes(t.bytes);
  m->set_started_ms(t.started_ms);
  m->set_finished_ms(t.finished_ms);
  m->set_error(t.error);
}

RebalanceTaskDef TaskFromPb(const pb::RebalanceTask& m) {
  RebalanceTaskDef t;
  t.id = m.id();
  t.kind = m.kind();
  t.table_id = m.table_id();
  t.db = m.db();
  t.table = m.table();
  t.representation = m.representation();
  t.slice_id = m.slice_id();
  t.source = m.source();
  t.target = m.target();
  t.drop_from = m.drop_from();
  t.state = m.state();
  t.bytes = m.bytes();
  t.started_ms = m.started_ms();
  t.finished_ms = m.finished_ms();
  t.error = m.error();
  return t;
}

// "catalog/row_id/<table id>": the first row id not yet reserved.
std::string RowIdKey(uint64_t table_id) { return std::string(kRowIdPrefix) + std::to_string(table_id); }

std::string DbKey(const std::string& db) { return std::string(kDbPrefix) + db; }
// '/' cannot appear in names we accept, so "<db>/<table>" is unambiguous.
std::string TableKey(const std::string& db, const std::string& table) {
  return std::string(kTablePrefix) + db + "/" + table;
}

void SerializeRepresentation(const RepresentationDef& rep, pb::Representation* pr) {
  pr->set_name(rep.name);
  for (int k : rep.key_columns) pr->add_key_columns(static_cast<uint32_t>(k));
  pr->set_distribution_columns(static_cast<uint32_t>(rep.distribution_columns));
  pr->set_unique(rep.unique);
  for (const SliceDef& s : rep.slices) {
    pb::Slice* ps = pr->add_slices();
    ps->set_id(s.id);
    ps->set_hash_begin(s.hash_begin);
    ps->set_hash_end(s.hash_end);
    for (const std::string& r : s.replicas) ps->add_replicas(r);
    for (const BuildingReplica& b : s.building) {
      pb::BuildingReplica* pbr = ps->add_building();
      pbr->set_node(b.node);
      pbr->set_task_id(b.task_id);
      pbr->set_source(b.source);
      pbr->set_started_ms(b.started_ms);
    }
  }
}

Status ParseRepresentation(const pb::Representation& pr, size_t column_count, RepresentationDef* rep) {
  rep->name = pr.name();
  for (uint32_t k : pr.key_columns()) {
    if (k >= column_count) return Status::Corruption("catalog: key column out of range");
    rep->key_columns.push_back(static_cast<int>(k));
  }
  rep->distribution_columns = static_cast<int>(pr.distribution_columns());
  rep->unique = pr.unique();
  for (const pb::Slice& ps : pr.slices()) {
    SliceDef s;
    s.id = ps.id();
    s.hash_begin = ps.hash_begin();
    s.hash_end = ps.hash_end();
    s.replicas.assign(ps.replicas().begin(), ps.replicas().end());
    for (const pb::BuildingReplica& pbr : ps.building()) {
      s.building.push_back(BuildingReplica{pbr.node(), pbr.task_id(), pbr.source(), pbr.started_ms()});
    }
    s.SyncWriteReplicas();
    rep->slices.push_back(std::move(s));
  }
  if (rep->slices.empty()) return Status::Corruption("catalog: representation without slices");
  return Status::OK();
}

void TableToPb(const TableDef& t, pb::Table* out) {
  pb::Table& m = *out;
  m.set_id(t.id);
  m.set_version(t.version);
  m.set_replicas(t.replicas);
  m.set_db(t.db);
  m.set_name(t.name);
  for (const ColumnDef& c : t.columns) {
    pb::Column* pc = m.add_columns();
    pc->set_name(c.name);
    pc->set_type_id(static_cast<uint32_t>(c.type.id));
    pc->set_type_length(c.type.length);
    pc->set_type_scale(c.type.scale);
    pc->set_type_unsigned(c.type.is_unsigned);
    pc->set_type_collation(c.type.collation);
    for (const std::string& e : c.type.elements) pc->add_type_elements(e);
    pc->set_nullable(c.nullable);
    pc->set_hidden(c.hidden);
    pc->set_default_now(c.default_now);
    pc->set_on_update_now(c.on_update_now);
    pc->set_auto_increment(c.auto_increment);
    if (c.default_value) {
      pc->set_has_default(true);
      std::string row;
      EncodeRow({*c.default_value}, &row);
      pc->set_default_row(row);
    }
  }
  SerializeRepresentation(t.primary, m.mutable_primary());
  for (const RepresentationDef& index : t.indexes) SerializeRepresentation(index, m.add_indexes());
  m.set_compression(t.compression);
  m.set_ddl_owner(t.ddl_owner);
  m.set_ddl_allows_writes(t.ddl_allows_writes);
  for (const RepresentationDef& index : t.pending_indexes) SerializeRepresentation(index, m.add_pending_indexes());
}

std::string SerializeTable(const TableDef& t) {
  pb::Table m;
  TableToPb(t, &m);
  return m.SerializeAsString();
}

Result<std::shared_ptr<const TableDef>> TableFromPb(const pb::Table& m) {
  auto t = std::make_shared<TableDef>();
  t->id = m.id();
  t->version = m.version();
  t->replicas = m.replicas();
  t->db = m.db();
  t->name = m.name();
  for (const pb::Column& pc : m.columns()) {
    ColumnDef c;
    c.name = pc.name();
    c.type = SqlType{static_cast<TypeId>(pc.type_id()), pc.type_length(),
                     static_cast<uint8_t>(pc.type_scale()), pc.type_unsigned()};
    c.type.collation = static_cast<uint16_t>(pc.type_collation());
    c.type.elements.assign(pc.type_elements().begin(), pc.type_elements().end());
    c.nullable = pc.nullable();
    c.hidden = pc.hidden();
    c.default_now = pc.default_now();
    c.on_update_now = pc.on_update_now();
    c.auto_increment = pc.auto_increment();
    if (pc.has_default()) {
      Row row;
      SHALE_RETURN_IF_ERROR(DecodeRow(pc.default_row(), &row));
      if (row.size() != 1) return Status::Corruption("catalog: bad column default");
      c.default_value = row[0];
    }
    t->columns.push_back(std::move(c));
  }
  SHALE_RETURN_IF_ERROR(ParseRepresentation(m.primary(), t->columns.size(), &t->primary));
  for (const pb::Representation& pi : m.indexes()) {
    RepresentationDef index;
    SHALE_RETURN_IF_ERROR(ParseRepresentation(pi, t->columns.size(), &index));
    t->indexes.push_back(std::move(index));
  }
  t->compression = m.compression();
  t->ddl_owner = m.ddl_owner();
  t->ddl_allows_writes = m.ddl_allows_writes();
  for (const pb::Representation& pi : m.pending_indexes()) {
    RepresentationDef index;
    SHALE_RETURN_IF_ERROR(ParseRepresentation(pi, t->columns.size(), &index));
    t->pending_indexes.push_back(std::move(index));
  }
  return std::shared_ptr<const TableDef>(std::move(t));
}

Result<std::shared_ptr<const TableDef>> ParseTable(std::string_view bytes) {
  pb::Table m;
  if (!m.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return Status::Corruption("catalog: unreadable table record");
  }
  return TableFromPb(m);
}

}  // namespace

storage::SliceOptions SliceOptionsOf(const TableDef& table) {
  storage::SliceOptions options;
  if (table.compression == "zlib") options.compression = storage::PageCompression::kZlib;
  if (table.compression == "zstd") options.compression = storage::PageCompression::kZstd;
  return options;
}

std::string EncodeKey(const std::vector<Value>& key_values) {
  std::string out;
  for (const Value& v : key_values) AppendKey(v, &out);
  return out;
}

uint64_t DistributionHash(const RepresentationDef& rep, const std::vector<Value>& key_values) {
  std::string prefix;
  for (int i = 0; i < rep.distribution_columns && i < static_cast<int>(key_values.size()); ++i) {
    AppendKey(key_values[i], &prefix);
  }
  return HashBytes(prefix);
}

std::vector<Value> PrimaryKeyValues(const TableDef& table, const Row& row) {
  return RepresentationKeyValues(table, table.primary, row);
}

std::vector<Value> RepresentationKeyValues(const TableDef& table, const RepresentationDef& rep,
                                           const Row& row) {
  std::vector<Value> out;
  out.reserve(rep.key_columns.size());
  for (int k : rep.key_columns) out.push_back(KeyForm(row[k], table.columns[k].type));
  return out;
}

std::vector<Value> RepresentationKeyValues(const RepresentationDef& rep, const Row& row) {
  std::vector<Value> out;
  out.reserve(rep.key_columns.size());
  for (int k : rep.key_columns) out.push_back(row[k]);
  return out;
}

std::string IndexEntryKey(const std::vector<Value>& index_values,
                          const std::vector<Value>& primary_values) {
  std::string out;
  for (const Value& v : index_values) AppendKey(v, &out);
  for (const Value& v : primary_values) AppendKey(v, &out);
  return out;
}

int TableDef::FindIndex(std::string_view name) const {
  for (size_t i = 0; i < indexes.size(); ++i) {
    const std::string& n = indexes[i].name;
    if (n.size() == name.size() && strncasecmp(n.data(), name.data(), n.size()) == 0) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

const SliceDef& RepresentationDef::SliceForHash(uint64_t h) const {
  // Slices are sorted by hash_begin and cover the whole hash space.
  auto it = std::upper_bound(slices.begin(), slices.end(), h,
                             [](uint64_t v, const SliceDef& s) { return v < s.hash_begin; });
  return *(it - 1);
}

bool IsUserVisibleCommand(const std::string& command) {
  pb::Command cmd;
  if (!cmd.ParseFromString(command)) return false;
  switch (cmd.op_case()) {
    case pb::Command::kCreateDatabase:
    case pb::Command::kDropDatabase:
    case pb::Command::kCreateTable:
    case pb::Command::kDropTable:
    case pb::Command::kReplaceTable:
    case pb::Command::kRenameTable:
    case pb::Command::kCreateUser:
    case pb::Command::kDropUser:
    case pb::Command::kSetCredential:
    case pb::Command::kChangeGrant:
    case pb::Command::kRevokeAll:
      return true;
    default:
      return false;
  }
}

bool OnlyPlacementDiffers(const TableDef& a, const TableDef& b) {
  auto strip = [](TableDef t) {
    t.version = 0;
    auto clear = [](RepresentationDef& rep) {
      for (SliceDef& s : rep.slices) {
        s.replicas.clear();
        s.building.clear();
        s.write_replicas.clear();
      }
    };
    clear(t.primary);
    for (RepresentationDef& index : t.indexes) clear(index);
    return SerializeTable(t);
  };
  return a.id == b.id && strip(a) == strip(b);
}

bool SliceDef::PlacedOn(const std::string& node) const {
  if (std::find(replicas.begin(), replicas.end(), node) != replicas.end()) return true;
  return std::any_of(building.begin(), building.end(), [&](const BuildingReplica& b) { return b.node == node; });
}

void SliceDef::SyncWriteReplicas() {
  write_replicas.clear();
  if (building.empty()) return;
  write_replicas = replicas;
  for (const BuildingReplica& b : building) write_replicas.push_back(b.node);
}

std::vector<const RepresentationDef*> TableDef::StoredRepresentations() const {
  std::vector<const RepresentationDef*> out{&primary};
  for (const RepresentationDef& index : indexes) out.push_back(&index);
  for (const RepresentationDef& index : pending_indexes) out.push_back(&index);
  return out;
}

int TableDef::AutoIncrementColumn() const {
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i].auto_increment) return static_cast<int>(i);
  }
  return -1;
}

int TableDef::FindColumn(std::string_view name) const {
  for (size_t i = 0; i < columns.size(); ++i) {
    const std::string& c = columns[i].name;
    if (c.size() == name.size() && strncasecmp(c.data(), name.data(), c.size()) == 0) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

namespace {

// "catalog/counter/<counter>/<table id>": the next value of a per-table
// counter other than the row id. DO NOT CHANGE.
constexpr std::string_view kCounterPrefix = "catalog/counter/";
// NextId reserves this many ids per cluster round.
constexpr uint64_t kClusterIdBatch = 16;

CommandResult Failed(Status st) { return CommandResult{std::move(st), 0}; }

uint64_t ParseU64(const std::string& s) {
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') break;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

}  // namespace

std::string Catalog::CounterKey(std::string_view counter, uint64_t table_id) const {
  if (counter == "row_id") return RowIdKey(table_id);
  return std::string(kCounterPrefix) + std::string(counter) + "/" + std::to_string(table_id);
}

Result<std::unique_ptr<Catalog>> Catalog::Load(storage::MetaStore* meta) {
  std::unique_ptr<Catalog> cat(new Catalog(meta));
  std::lock_guard lock(cat->mu_);
  SHALE_RETURN_IF_ERROR(cat->LoadLocked());
  std::string applied;
  Status st = meta->Get(kAppliedIndexKey, &applied);
  if (st.ok()) {
    cat->loaded_applied_index_ = ParseU64(applied);
  } else if (!st.IsNotFound()) {
    return st;
  }
  return cat;
}

Status Catalog::LoadLocked() {
  dbs_.clear();
  counters_.clear();
  next_id_ = 1;
  std::string next;
  Status st = meta_->Get(kNextIdKey, &next);
  if (st.ok()) {
    next_id_ = std::stoull(next);
  } else if (!st.IsNotFound()) {
    return st;
  }
  SHALE_RETURN_IF_ERROR(meta_->Scan(kDbPrefix, [&](std::string_view key, std::string_view) {
    dbs_[std::string(key.substr(kDbPrefix.size()))];
    return true;
  }));
  Status parse_status;
  SHALE_RETURN_IF_ERROR(meta_->Scan(kTablePrefix, [&](std::string_view, std::string_view value) {
    auto t = ParseTable(value);
    if (!t.ok()) {
      parse_status = t.status();
      return false;
    }
    dbs_[(*t)->db][(*t)->name] = *t;
    return true;
  }));
  SHALE_RETURN_IF_ERROR(parse_status);
  for (std::string_view prefix : {kRowIdPrefix, kCounterPrefix}) {
    SHALE_RETURN_IF_ERROR(meta_->Scan(prefix, [&](std::string_view key, std::string_view value) {
      counters_[std::string(key)] = std::stoll(std::string(value));
      return true;
    }));
  }
  tasks_.clear();
  SHALE_RETURN_IF_ERROR(meta_->Scan(kTaskPrefix, [&](std::string_view, std::string_view value) {
    pb::RebalanceTask m;
    if (!m.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
      parse_status = Status::Corruption("catalog: unreadable rebalance task record");
      return false;
    }
    tasks_[m.id()] = TaskFromPb(m);
    return true;
  }));
  return parse_status;
}

void Catalog::Notify(TableChangePhase phase, const std::vector<Changed>& changed) {
  if (!listener_) return;
  for (const Changed& c : changed) listener_(phase, c.before.get(), c.after.get());
}

std::vector<std::shared_ptr<const TableDef>> Catalog::AllTables() const {
  std::lock_guard lock(mu_);
  std::vector<std::shared_ptr<const TableDef>> out;
  for (auto& [db, tables] : dbs_) {
    for (auto& [name, t] : tables) out.push_back(t);
  }
  return out;
}

void Catalog::SnapshotInto(std::string* state_bytes) const {
  pb::State state;
  std::lock_guard lock(mu_);
  state.set_next_id(next_id_);
  for (auto& [db, tables] : dbs_) {
    state.add_databases(db);
    for (auto& [name, t] : tables) TableToPb(*t, state.add_tables());
  }
  for (auto& [key, next] : counters_) {
    pb::State::Counter* c = state.add_counters();
    c->set_key(key);
    c->set_next(next);
  }
  for (auto& [id, task] : tasks_) TaskToPb(task, state.add_tasks());
  *state_bytes = state.SerializeAsString();
}

Status Catalog::InstallSnapshot(const std::string& state_bytes, uint64_t index,
                                std::vector<storage::MetaStore::Change> extra) {
  pb::State state;
  if (!state.ParseFromString(state_bytes)) return Status::Corruption("catalog: unreadable snapshot state");
  std::lock_guard apply(apply_mu_);
  std::vector<Changed> changed;
  {
    std::lock_guard lock(mu_);
    std::map<std::string, std::map<std::string, std::shared_ptr<const TableDef>>> dbs;
    for (const std::string& db : state.databases()) dbs[db];
    std::map<uint64_t, std::shared_ptr<const TableDef>> before, after;
    for (const pb::Table& pt : state.tables()) {
      SHALE_ASSIGN_OR_RETURN(auto t, TableFromPb(pt));
      dbs[t->db][t->name] = t;
      after[t->id] = t;
    }
    for (auto& [db, tables] : dbs_) {
      for (auto& [name, t] : tables) before[t->id] = t;
    }
    for (auto& [id, t] : before) {
      auto a = after.find(id);
      if (a == after.end()) {
        changed.push_back({t, nullptr});
      } else if (SerializeTable(*t) != SerializeTable(*a->second)) {
        changed.push_back({t, a->second});
      }
    }
    for (auto& [id, t] : after) {
      if (!before.count(id)) changed.push_back({nullptr, t});
    }
    Notify(TableChangePhase::kPrepare, changed);
    std::vector<storage::MetaStore::Change> batch;
    SHALE_RETURN_IF_ERROR(meta_->Scan("catalog/", [&](std::string_view key, std::string_view) {
      batch.emplace_back(std::string(key), std::nullopt);
      return true;
    }));
    batch.emplace_back(std::string(kNextIdKey), std::to_string(state.next_id()));
    for (const std::string& db : state.databases()) {
      pb::Database m;
      m.set_name(db);
      batch.emplace_back(DbKey(db), m.SerializeAsString());
    }
    for (const pb::Table& t : state.tables()) batch.emplace_back(TableKey(t.db(), t.name()), t.SerializeAsString());
    for (const pb::State::Counter& c : state.counters()) batch.emplace_back(c.key(), std::to_string(c.next()));
    for (const pb::RebalanceTask& t : state.tasks()) batch.emplace_back(TaskKey(t.id()), t.SerializeAsString());
    for (auto& change : extra) batch.push_back(std::move(change));
    batch.emplace_back(std::string(kAppliedIndexKey), std::to_string(index));
    SHALE_RETURN_IF_ERROR(meta_->Write(batch));
    dbs_ = std::move(dbs);
    next_id_ = state.next_id();
    counters_.clear();
    for (const pb::State::Counter& c : state.counters()) counters_[c.key()] = c.next();
    tasks_.clear();
    for (const pb::RebalanceTask& t : state.tasks()) tasks_[t.id()] = TaskFromPb(t);
  }
  Notify(TableChangePhase::kDone, changed);
  return Status::OK();
}

CommandResult Catalog::Submit(const std::string& command) {
  if (detached_.load(std::memory_order_acquire)) {
    return CommandResult{Status::Unavailable("catalog: detached from the cluster (shutting down)"), 0};
  }
  if (submit_) return submit_(command);
  return ApplyCommand(command, 0);
}

CommandResult Catalog::ApplyCommand(const std::string& command, uint64_t index) {
  std::lock_guard apply(apply_mu_);
  std::vector<Changed> changed;
  CommandResult r;
  {
    std::lock_guard lock(mu_);
    r = ApplyLocked(command, index, &changed);
  }
  Notify(TableChangePhase::kDone, changed);
  return r;
}

CommandResult Catalog::ApplyLocked(const std::string& command, uint64_t index, std::vector<Changed>* changed) {
  pb::Command cmd;
  if (!cmd.ParseFromString(command)) return Failed(Status::Corruption("catalog: unreadable command"));
  auto write = [&](std::vector<storage::MetaStore::Change> batch) {
    if (index != 0) batch.emplace_back(std::string(kAppliedIndexKey), std::to_string(index));
    return meta_->Write(batch);
  };
  // Tells the listener (kPrepare) about a change about to be written.
  auto prepare = [&](const std::shared_ptr<const TableDef>& before, const TableDef* after) {
    if (listener_) listener_(TableChangePhase::kPrepare, before.get(), after);
  };
  auto publish = [&](const std::shared_ptr<const TableDef>& before, TableDef def) {
    auto after = std::make_shared<const TableDef>(std::move(def));
    dbs_[after->db][after->name] = after;
    changed->push_back({before, after});
  };
  switch (cmd.op_case()) {
    case pb::Command::kCreateDatabase: {
      const auto& op = cmd.create_database();
      if (dbs_.count(op.name())) {
        if (op.if_not_exists()) return CommandResult{Status::OK(), 0};
        return Failed(SqlError(ErrorCode::kDbCreateExists, "Can't create database '{}'; database exists", op.name()));
      }
      pb::Database m;
      m.set_name(op.name());
      if (Status st = write({{DbKey(op.name()), m.SerializeAsString()}}); !st.ok()) return Failed(st);
      dbs_[op.name()];
      return CommandResult{Status::OK(), 1};
    }
    case pb::Command::kDropDatabase: {
      const auto& op = cmd.drop_database();
      auto it = dbs_.find(op.name());
      if (it == dbs_.end()) {
        if (op.if_exists()) return CommandResult{Status::OK(), 0};
        return Failed(
            SqlError(ErrorCode::kDbDropExists, "Can't drop database '{}'; database doesn't exist", op.name()));
      }
      std::vector<storage::MetaStore::Change> batch;
      for (auto& [tname, t] : it->second) {
        batch.emplace_back(TableKey(op.name(), tname), std::nullopt);
        for (auto c = counters_.begin(); c != counters_.end();) {
          if (c->first == RowIdKey(t->id) ||
              (c->first.rfind(kCounterPrefix, 0) == 0 && c->first.ends_with("/" + std::to_string(t->id)))) {
            batch.emplace_back(c->first, std::nullopt);
            c = counters_.erase(c);
          } else {
            ++c;
          }
        }
      }
      batch.emplace_back(DbKey(op.name()), std::nullopt);
      if (Status st = write(std::move(batch)); !st.ok()) return Failed(st);
      int64_t n = 0;
      for (auto& [tname, t] : it->second) {
        changed->push_back({t, nullptr});
        ++n;
      }
      dbs_.erase(it);
      return CommandResult{Status::OK(), n};
    }
    case pb::Command::kCreateTable: {
      const auto& op = cmd.create_table();
      auto parsed = TableFromPb(op.table());
      if (!parsed.ok()) return Failed(parsed.status());
      TableDef def = **parsed;
      auto d = dbs_.find(def.db);
      if (d == dbs_.end()) return Failed(SqlError(ErrorCode::kBadDb, "Unknown database '{}'", def.db));
      if (d->second.count(def.name)) {
        if (op.if_not_exists()) return CommandResult{Status::OK(), 0};
        return Failed(SqlError(ErrorCode::kTableExists, "Table '{}' already exists", def.name));
      }
      def.version = 1;
      prepare(nullptr, &def);
      if (Status st = write({{TableKey(def.db, def.name), SerializeTable(def)}}); !st.ok()) return Failed(st);
      publish(nullptr, std::move(def));
      return CommandResult{Status::OK(), 1};
    }
    case pb::Command::kDropTable: {
      const auto& op = cmd.drop_table();
      auto d = dbs_.find(op.db());
      auto t = d == dbs_.end() ? decltype(d->second.end())() : d->second.find(op.name());
      if (d == dbs_.end() || t == d->second.end() || (op.id() != 0 && t->second->id != op.id())) {
        return Failed(SqlError(ErrorCode::kBadTable, "Unknown table '{}.{}'", op.db(), op.name()));
      }
      std::shared_ptr<const TableDef> old = t->second;
      std::vector<storage::MetaStore::Change> batch{{TableKey(op.db(), op.name()), std::nullopt}};
      for (auto c = counters_.begin(); c != counters_.end();) {
        if (c->first == RowIdKey(old->id) ||
            (c->first.rfind(kCounterPrefix, 0) == 0 && c->first.ends_with("/" + std::to_string(old->id)))) {
          batch.emplace_back(c->first, std::nullopt);
          c = counters_.erase(c);
        } else {
          ++c;
        }
      }
      if (Status st = write(std::move(batch)); !st.ok()) return Failed(st);
      d->second.erase(t);
      changed->push_back({old, nullptr});
      return CommandResult{Status::OK(), 1};
    }
    case pb::Command::kReplaceTable: {
      const auto& op = cmd.replace_table();
      auto parsed = TableFromPb(op.table());
      if (!parsed.ok()) return Failed(parsed.status());
      TableDef def = **parsed;
      auto d = dbs_.find(def.db);
      if (d == dbs_.end() || !d->second.count(def.name)) {
        return Failed(SqlError(ErrorCode::kNoSuchTable, "Table '{}.{}' doesn't exist", def.db, def.name));
      }
      std::shared_ptr<const TableDef> old = d->second[def.name];
      if (old->id != def.id || old->version != op.expected_version()) {
        return Failed(
            SqlError(ErrorCode::kTableDefChanged, "Table definition has changed, please retry transaction"));
      }
      def.version = old->version + 1;
      prepare(old, &def);
      if (Status st = write({{TableKey(def.db, def.name), SerializeTable(def)}}); !st.ok()) return Failed(st);
      publish(old, std::move(def));
      return CommandResult{Status::OK(), 1};
    }
    case pb::Command::kRenameTable: {
      const auto& op = cmd.rename_table();
      auto d = dbs_.find(op.db());
      if (d == dbs_.end() || !d->second.count(op.name())) {
        return Failed(SqlError(ErrorCode::kNoSuchTable, "Table '{}.{}' doesn't exist", op.db(), op.name()));
      }
      auto nd = dbs_.find(op.new_db());
      if (nd == dbs_.end()) return Failed(SqlError(ErrorCode::kBadDb, "Unknown database '{}'", op.new_db()));
      if (nd->second.count(op.new_name())) {
        return Failed(SqlError(ErrorCode::kTableExists, "Table '{}' already exists", op.new_name()));
      }
      std::shared_ptr<const TableDef> old = d->second[op.name()];
      TableDef def = *old;
      def.db = op.new_db();
      def.name = op.new_name();
      def.version = old->version + 1;
      if (Status st = write({{TableKey(op.db(), op.name()), std::nullopt},
                             {TableKey(def.db, def.name), SerializeTable(def)}});
          !st.ok()) {
        return Failed(st);
      }
      d->second.erase(op.name());
      publish(old, std::move(def));
      return CommandResult{Status::OK(), 1};
    }
    case pb::Command::kReserveIds: {
      const auto& op = cmd.reserve_ids();
      if (op.count() < 1) return Failed(Status::InvalidArgument("id count must be positive"));
      if (op.counter() == "next_id") {
        const uint64_t first = std::max<uint64_t>(next_id_, static_cast<uint64_t>(std::max<int64_t>(op.at_least(), 0)));
        const uint64_t next = first + static_cast<uint64_t>(op.count());
        if (Status st = write({{std::string(kNextIdKey), std::to_string(next)}}); !st.ok()) return Failed(st);
        next_id_ = next;
        return CommandResult{Status::OK(), static_cast<int64_t>(first)};
      }
      const std::string key = CounterKey(op.counter(), op.table_id());
      auto c = counters_.find(key);
      const int64_t stored = c == counters_.end() ? 1 : c->second;
      const int64_t first = std::max(stored, op.at_least());
      int64_t count = op.count();
      if (INT64_MAX - first < count) {
        // A shorter range up to INT64_MAX when the caller accepts one.
        if (op.min_count() < 1 || INT64_MAX - first < op.min_count()) {
          return Failed(
              SqlError(ErrorCode::kAutoincReadFailed, "Failed to read auto-increment value from storage engine"));
        }
        count = INT64_MAX - first;
      }
      if (Status st = write({{key, std::to_string(first + count)}}); !st.ok()) return Failed(st);
      counters_[key] = first + count;
      return CommandResult{Status::OK(), first};
    }
    case pb::Command::kSetCounter: {
      const auto& op = cmd.set_counter();
      if (op.counter().empty() || op.counter() == "next_id" || op.value() < 1) {
        return Failed(Status::InvalidArgument("bad counter command"));
      }
      const std::string key = CounterKey(op.counter(), op.table_id());
      auto c = counters_.find(key);
      const int64_t stored = c == counters_.end() ? 1 : c->second;
      // Compare-and-set: someone reserved since; leave the counter alone.
      if (op.expected() != 0 && stored != op.expected()) return CommandResult{Status::OK(), 0};
      if (Status st = write({{key, std::to_string(op.value())}}); !st.ok()) return Failed(st);
      counters_[key] = op.value();
      // Every node drops its cached ranges of every counter (a reset must not
      // leave a node handing out ids from before it).
      if (op.expected() == 0) counter_generation_.fetch_add(1, std::memory_order_acq_rel);
      return CommandResult{Status::OK(), 1};
    }
    case pb::Command::kRemoveNodeReplicas: {
      const std::string& node = cmd.remove_node_replicas().node();
      std::vector<storage::MetaStore::Change> batch;
      std::vector<std::pair<std::shared_ptr<const TableDef>, TableDef>> updates;
      std::vector<RebalanceTaskDef> cancelled;
      int64_t slices = 0;
      for (auto& [db, tables] : dbs_) {
        for (auto& [name, t] : tables) {
          TableDef def = *t;
          bool touched = false;
          auto strip = [&](RepresentationDef& rep) {
            for (SliceDef& s : rep.slices) {
              auto it = std::find(s.replicas.begin(), s.replicas.end(), node);
              if (it != s.replicas.end()) {
                s.replicas.erase(it);
                touched = true;
                ++slices;
              }
              // Building replicas on the node, or copied from it, are given
              // up (all of them when no serving replica is left).
              for (auto b = s.building.begin(); b != s.building.end();) {
                if (b->node != node && b->source != node && !s.replicas.empty()) {
                  ++b;
                  continue;
                }
                if (auto task = tasks_.find(b->task_id); task != tasks_.end()) {
                  RebalanceTaskDef done = task->second;
                  done.state = "cancelled";
                  done.error = fmt::format("node {} left the cluster", node);
                  cancelled.push_back(std::move(done));
                }
                b = s.building.erase(b);
                touched = true;
              }
              s.SyncWriteReplicas();
            }
          };
          strip(def.primary);
          for (RepresentationDef& rep : def.indexes) strip(rep);
          // An online index build's writers write the pending indexes too;
          // the build itself starts over (its table version is gone).
          for (RepresentationDef& rep : def.pending_indexes) strip(rep);
          if (!touched) continue;
          def.version = t->version + 1;
          batch.emplace_back(TableKey(def.db, def.name), SerializeTable(def));
          updates.emplace_back(t, std::move(def));
        }
      }
      for (const RebalanceTaskDef& task : cancelled) PutTaskLocked(task, &batch);
      if (batch.empty() && index == 0) return CommandResult{Status::OK(), 0};
      if (Status st = write(std::move(batch)); !st.ok()) return Failed(st);
      for (auto& [old, def] : updates) publish(old, std::move(def));
      return CommandResult{Status::OK(), slices};
    }
    case pb::Command::kAddBuildingReplica:
    case pb::Command::kPromoteReplica:
    case pb::Command::kCancelTask: {
      uint64_t table_id = 0, slice_id = 0;
      if (cmd.has_add_building_replica()) {
        table_id = cmd.add_building_replica().table_id();
        slice_id = cmd.add_building_replica().slice_id();
      } else if (cmd.has_promote_replica()) {
        table_id = cmd.promote_replica().table_id();
        slice_id = cmd.promote_replica().slice_id();
      } else {
        table_id = cmd.cancel_task().table_id();
        slice_id = cmd.cancel_task().slice_id();
      }
      std::shared_ptr<const TableDef> old;
      for (auto& [db, tables] : dbs_) {
        for (auto& [name, t] : tables) {
          if (t->id == table_id) old = t;
        }
      }
      TableDef def = old ? *old : TableDef{};
      SliceDef* slice = nullptr;
      std::string rep_name;
      if (old) {
        std::vector<RepresentationDef*> reps{&def.primary};
        for (RepresentationDef& rep : def.indexes) reps.push_back(&rep);
        for (RepresentationDef* rep : reps) {
          for (SliceDef& sd : rep->slices) {
            if (sd.id == slice_id) {
              slice = &sd;
              rep_name = rep->name;
            }
          }
        }
      }
      if (slice == nullptr) {
        return Failed(Status::InvalidArgument(fmt::format("slice {} of table {} no longer exists", slice_id, table_id)));
      }
      std::vector<storage::MetaStore::Change> batch;
      RebalanceTaskDef task;
      if (cmd.has_add_building_replica()) {
        task = TaskFromPb(cmd.add_building_replica().task());
        task.table_id = table_id;
        task.slice_id = slice_id;
        task.db = def.db;
        task.table = def.name;
        task.representation = rep_name;
        task.state = "copying";
        task.bytes = 0;
        task.finished_ms = 0;
        if (task.id == 0 || tasks_.count(task.id)) {
          return Failed(Status::InvalidArgument(fmt::format("rebalance task id {} is not fresh", task.id)));
        }
        if (std::find(slice->replicas.begin(), slice->replicas.end(), task.source) == slice->replicas.end()) {
          return Failed(Status::InvalidArgument(
              fmt::format("slice {}: {} is not a serving replica (copy source)", slice_id, task.source)));
        }
        if (task.target.empty() || slice->PlacedOn(task.target)) {
          return Failed(Status::InvalidArgument(
              fmt::format("slice {}: node '{}' already holds a replica", slice_id, task.target)));
        }
        slice->building.push_back(BuildingReplica{task.target, task.id, task.source, task.started_ms});
      } else {
        const uint64_t task_id =
            cmd.has_promote_replica() ? cmd.promote_replica().task_id() : cmd.cancel_task().task_id();
        auto b = std::find_if(slice->building.begin(), slice->building.end(),
                              [&](const BuildingReplica& br) { return br.task_id == task_id; });
        auto known = tasks_.find(task_id);
        if (b == slice->building.end() || known == tasks_.end()) {
          return Failed(Status::InvalidArgument(
              fmt::format("slice {}: rebalance task {} is not building a replica", slice_id, task_id)));
        }
        task = known->second;
        if (cmd.has_promote_replica()) {
          slice->replicas.push_back(b->node);
          if (!task.drop_from.empty() && slice->replicas.size() > 1) {
            auto gone = std::find(slice->replicas.begin(), slice->replicas.end(), task.drop_from);
            if (gone != slice->replicas.end()) slice->replicas.erase(gone);
          }
          task.state = "finished";
          task.bytes = cmd.promote_replica().bytes();
          task.finished_ms = cmd.promote_replica().finished_ms();
        } else {
          task.state = "cancelled";
          task.error = cmd.cancel_task().error();
          task.finished_ms = cmd.cancel_task().finished_ms();
        }
        slice->building.erase(b);
      }
      slice->SyncWriteReplicas();
      def.version = old->version + 1;
      if (cmd.has_add_building_replica()) prepare(old, &def);
      batch.emplace_back(TableKey(def.db, def.name), SerializeTable(def));
      PutTaskLocked(task, &batch);
      if (Status st = write(std::move(batch)); !st.ok()) return Failed(st);
      publish(old, std::move(def));
      return CommandResult{Status::OK(), 1};
    }
    default: return Failed(Status::InvalidArgument("not a catalog command"));
  }
}

void Catalog::PutTaskLocked(const RebalanceTaskDef& task, std::vector<storage::MetaStore::Change>* batch) {
  pb::RebalanceTask m;
  TaskToPb(task, &m);
  batch->emplace_back(TaskKey(task.id), m.SerializeAsString());
  tasks_[task.id] = task;
  size_t finished = 0;
  for (const auto& [id, t] : tasks_) finished += t.state != "copying";
  for (auto it = tasks_.begin(); finished > kKeptFinishedTasks && it != tasks_.end();) {
    if (it->second.state == "copying") {
      ++it;
      continue;
    }
    batch->emplace_back(TaskKey(it->first), std::nullopt);
    it = tasks_.erase(it);
    --finished;
  }
}

Status Catalog::AddBuildingReplica(const RebalanceTaskDef& task) {
  pb::Command cmd;
  auto* op = cmd.mutable_add_building_replica();
  op->set_table_id(task.table_id);
  op->set_slice_id(task.slice_id);
  TaskToPb(task, op->mutable_task());
  return Submit(cmd.SerializeAsString()).status;
}

Status Catalog::PromoteReplica(uint64_t table_id, uint64_t slice_id, uint64_t task_id, uint64_t bytes,
                               int64_t finished_ms) {
  pb::Command cmd;
  auto* op = cmd.mutable_promote_replica();
  op->set_table_id(table_id);
  op->set_slice_id(slice_id);
  op->set_task_id(task_id);
  op->set_bytes(bytes);
  op->set_finished_ms(finished_ms);
  return Submit(cmd.SerializeAsString()).status;
}

Status Catalog::CancelTask(uint64_t table_id, uint64_t slice_id, uint64_t task_id, const std::string& error,
                           int64_t finished_ms) {
  pb::Command cmd;
  auto* op = cmd.mutable_cancel_task();
  op->set_table_id(table_id);
  op->set_slice_id(slice_id);
  op->set_task_id(task_id);
  op->set_error(error);
  op->set_finished_ms(finished_ms);
  return Submit(cmd.SerializeAsString()).status;
}

std::vector<RebalanceTaskDef> Catalog::RebalanceTasks() const {
  std::lock_guard lock(mu_);
  std::vector<RebalanceTaskDef> out;
  for (const auto& [id, t] : tasks_) out.push_back(t);
  return out;
}

Status Catalog::CreateDatabase(const std::string& name, bool if_not_exists, bool* created) {
  pb::Command cmd;
  cmd.mutable_create_database()->set_name(name);
  cmd.mutable_create_database()->set_if_not_exists(if_not_exists);
  CommandResult r = Submit(cmd.SerializeAsString());
  *created = r.status.ok() && r.value == 1;
  return r.status;
}

Status Catalog::DropDatabase(const std::string& name, bool if_exists,
                             std::vector<std::shared_ptr<const TableDef>>* dropped) {
  std::vector<std::shared_ptr<const TableDef>> tables;
  {
    std::lock_guard lock(mu_);
    auto it = dbs_.find(name);
    if (it != dbs_.end()) {
      for (auto& [tname, t] : it->second) tables.push_back(t);
    }
  }
  pb::Command cmd;
  cmd.mutable_drop_database()->set_name(name);
  cmd.mutable_drop_database()->set_if_exists(if_exists);
  CommandResult r = Submit(cmd.SerializeAsString());
  if (r.status.ok() && r.value > 0) {
    // The tables the database held when the statement started (the count
    // from the apply is exact; the definitions are what this node saw).
    for (auto& t : tables) dropped->push_back(t);
  }
  return r.status;
}

bool Catalog::DatabaseExists(const std::string& name) const {
  std::lock_guard lock(mu_);
  return dbs_.count(name) > 0;
}

std::vector<std::string> Catalog::ListDatabases() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (auto& [name, tables] : dbs_) out.push_back(name);
  return out;
}

Result<std::shared_ptr<const TableDef>> Catalog::GetTable(const std::string& db,
                                                          const std::string& name) const {
  std::lock_guard lock(mu_);
  auto d = dbs_.find(db);
  // A table in a missing database is a missing table, as in MySQL.
  if (d == dbs_.end() || !d->second.count(name)) {
    return SqlError(ErrorCode::kNoSuchTable, "Table '{}.{}' doesn't exist", db, name);
  }
  auto t = d->second.find(name);
  return t->second;
}

Status Catalog::CreateTable(TableDef def, bool if_not_exists, bool* created) {
  pb::Command cmd;
  TableToPb(def, cmd.mutable_create_table()->mutable_table());
  cmd.mutable_create_table()->set_if_not_exists(if_not_exists);
  CommandResult r = Submit(cmd.SerializeAsString());
  *created = r.status.ok() && r.value == 1;
  return r.status;
}

Status Catalog::DropTable(const std::string& db, const std::string& name) {
  pb::Command cmd;
  cmd.mutable_drop_table()->set_db(db);
  cmd.mutable_drop_table()->set_name(name);
  return Submit(cmd.SerializeAsString()).status;
}

Status Catalog::ReplaceTable(const std::shared_ptr<const TableDef>& expected, TableDef def) {
  pb::Command cmd;
  TableToPb(def, cmd.mutable_replace_table()->mutable_table());
  cmd.mutable_replace_table()->set_expected_version(expected->version);
  if (expected->id != def.id) {
    return SqlError(ErrorCode::kTableDefChanged, "Table definition has changed, please retry transaction");
  }
  return Submit(cmd.SerializeAsString()).status;
}

Status Catalog::RenameTable(const std::string& db, const std::string& name, const std::string& new_db,
                            const std::string& new_name) {
  pb::Command cmd;
  auto* op = cmd.mutable_rename_table();
  op->set_db(db);
  op->set_name(name);
  op->set_new_db(new_db);
  op->set_new_name(new_name);
  return Submit(cmd.SerializeAsString()).status;
}

Result<std::vector<std::string>> Catalog::ListTables(const std::string& db) const {
  std::lock_guard lock(mu_);
  auto d = dbs_.find(db);
  if (d == dbs_.end()) return SqlError(ErrorCode::kBadDb, "Unknown database '{}'", db);
  std::vector<std::string> out;
  for (auto& [name, t] : d->second) out.push_back(name);
  return out;
}

Result<uint64_t> Catalog::NextId() {
  std::lock_guard lock(id_mu_);
  if (id_cache_next_ < id_cache_limit_) return id_cache_next_++;
  // Without a cluster, one id per (synced) MetaStore write, as before; with
  // one, a small block per Raft round.
  const uint64_t n = submit_ ? kClusterIdBatch : 1;
  pb::Command cmd;
  cmd.mutable_reserve_ids()->set_counter("next_id");
  cmd.mutable_reserve_ids()->set_count(static_cast<int64_t>(n));
  CommandResult r = Submit(cmd.SerializeAsString());
  SHALE_RETURN_IF_ERROR(r.status);
  const uint64_t first = static_cast<uint64_t>(r.value);
  id_cache_next_ = first + 1;
  id_cache_limit_ = first + n;
  return first;
}

Result<int64_t> Catalog::ReserveIds(uint64_t table_id, std::string_view counter, int64_t count, int64_t at_least,
                                    int64_t min_count) {
  if (count < 1) return Status::InvalidArgument("id count must be positive");
  if (counter.empty() || counter == "next_id" || counter.find('/') != std::string_view::npos) {
    return Status::InvalidArgument(fmt::format("bad counter name '{}'", counter));
  }
  pb::Command cmd;
  auto* op = cmd.mutable_reserve_ids();
  op->set_counter(std::string(counter));
  op->set_table_id(table_id);
  op->set_count(count);
  op->set_at_least(at_least);
  op->set_min_count(min_count);
  CommandResult r = Submit(cmd.SerializeAsString());
  SHALE_RETURN_IF_ERROR(r.status);
  return r.value;
}

Result<int64_t> Catalog::AllocateRowIds(uint64_t table_id, int64_t count) {
  return ReserveIds(table_id, IdCounter::kRowId, count);
}

namespace {
// The counter names of the ReserveIds / SetCounter commands.
// DO NOT CHANGE (they are part of the stored counter keys).
std::string_view CounterName(IdCounter counter) {
  return counter == IdCounter::kRowId ? "row_id" : "auto_inc";
}
}  // namespace

Catalog::RowIdRange& Catalog::IdRangeLocked(uint64_t table_id, IdCounter counter) {
  RowIdRange& r = row_ids_[{table_id, counter}];
  const uint64_t generation = counter_generation_.load(std::memory_order_acquire);
  if (r.generation != generation) r = RowIdRange{0, 0, generation};
  return r;
}

int64_t Catalog::StoredCounter(uint64_t table_id, IdCounter counter) const {
  std::lock_guard lock(mu_);
  auto it = counters_.find(CounterKey(CounterName(counter), table_id));
  return it == counters_.end() ? 1 : it->second;
}

Result<int64_t> Catalog::ReserveIds(uint64_t table_id, IdCounter counter, int64_t count) {
  if (count < 1) return Status::InvalidArgument("id count must be positive");
  std::lock_guard lock(id_mu_);
  RowIdRange& r = IdRangeLocked(table_id, counter);
  if (r.limit - r.next < count) {
    // A new range; what is left of the old one is skipped unless the new
    // one continues it.
    const uint64_t generation = r.generation;
    const int64_t want = std::max(count, kRowIdBatch);
    SHALE_ASSIGN_OR_RETURN(int64_t first, ReserveIds(table_id, CounterName(counter), want, r.next, count));
    const int64_t limit = INT64_MAX - first < want ? INT64_MAX : first + want;
    if (first != r.limit || r.next == 0) r.next = first;
    r.limit = limit;
    r.generation = generation;
  }
  int64_t first = r.next;
  r.next += count;
  return first;
}

Status Catalog::AdvanceIds(uint64_t table_id, IdCounter counter, int64_t next) {
  std::lock_guard lock(id_mu_);
  RowIdRange& r = IdRangeLocked(table_id, counter);
  if (next <= r.next) return Status::OK();
  if (next <= r.limit) {  // still inside the range this node reserved
    r.next = next;
    return Status::OK();
  }
  // The stored counter must pass `next`, so no node (nor this one after a
  // restart) hands out an id below it again: reserve the one id before it.
  const uint64_t generation = r.generation;
  SHALE_ASSIGN_OR_RETURN(int64_t first, ReserveIds(table_id, CounterName(counter), 1, next - 1));
  r.next = std::max(first, next);
  r.limit = first + 1;
  r.generation = generation;
  return Status::OK();
}

Status Catalog::SetNextId(uint64_t table_id, IdCounter counter, int64_t next) {
  if (next < 1) next = 1;
  pb::Command cmd;
  auto* op = cmd.mutable_set_counter();
  op->set_counter(std::string(CounterName(counter)));
  op->set_table_id(table_id);
  op->set_value(next);
  return Submit(cmd.SerializeAsString()).status;
}

Result<int64_t> Catalog::PeekNextId(uint64_t table_id, IdCounter counter) const {
  const int64_t stored = StoredCounter(table_id, counter);
  std::lock_guard lock(id_mu_);
  auto it = row_ids_.find({table_id, counter});
  if (it != row_ids_.end() && it->second.generation == counter_generation_.load(std::memory_order_acquire) &&
      it->second.next < it->second.limit) {
    return it->second.next;
  }
  return stored;
}

Status Catalog::ReleaseUnusedIds() {
  if (detached_.load(std::memory_order_acquire)) return Status::OK();
  std::lock_guard lock(id_mu_);
  const uint64_t generation = counter_generation_.load(std::memory_order_acquire);
  for (auto& [key, r] : row_ids_) {
    if (r.limit == r.next || r.generation != generation) continue;
    pb::Command cmd;
    auto* op = cmd.mutable_set_counter();
    op->set_counter(std::string(CounterName(key.second)));
    op->set_table_id(key.first);
    op->set_value(r.next);
    op->set_expected(r.limit);  // only if no one reserved after this node
    SHALE_RETURN_IF_ERROR(Submit(cmd.SerializeAsString()).status);
    r.limit = r.next;
  }
  return Status::OK();
}

}  // namespace shale::catalog

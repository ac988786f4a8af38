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
    rep->slices.push_back(std::move(s));
  }
  if (rep->slices.empty()) return Status::Corruption("catalog: representation without slices");
  return Status::OK();
}

std::string SerializeTable(const TableDef& t) {
  pb::Table m;
  m.set_id(t.id);
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
  return m.SerializeAsString();
}

Result<std::shared_ptr<const TableDef>> ParseTable(std::string_view bytes) {
  pb::Table m;
  if (!m.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return Status::Corruption("catalog: unreadable table record");
  }
  auto t = std::make_shared<TableDef>();
  t->id = m.id();
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
  return std::shared_ptr<const TableDef>(std::move(t));
}

}  // namespace

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

int TableDef::FindColumn(std::string_view name) const {
  for (size_t i = 0; i < columns.size(); ++i) {
    const std::string& c = columns[i].name;
    if (c.size() == name.size() && strncasecmp(c.data(), name.data(), c.size()) == 0) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

Result<std::unique_ptr<Catalog>> Catalog::Load(storage::MetaStore* meta) {
  std::unique_ptr<Catalog> cat(new Catalog(meta));
  std::string next;
  Status st = meta->Get(kNextIdKey, &next);
  if (st.ok()) {
    cat->next_id_ = std::stoull(next);
  } else if (!st.IsNotFound()) {
    return st;
  }
  SHALE_RETURN_IF_ERROR(meta->Scan(kDbPrefix, [&](std::string_view key, std::string_view) {
    cat->dbs_[std::string(key.substr(kDbPrefix.size()))];
    return true;
  }));
  Status parse_status;
  SHALE_RETURN_IF_ERROR(meta->Scan(kTablePrefix, [&](std::string_view, std::string_view value) {
    auto t = ParseTable(value);
    if (!t.ok()) {
      parse_status = t.status();
      return false;
    }
    cat->dbs_[(*t)->db][(*t)->name] = *t;
    return true;
  }));
  SHALE_RETURN_IF_ERROR(parse_status);
  return cat;
}

Status Catalog::CreateDatabase(const std::string& name, bool if_not_exists, bool* created) {
  std::lock_guard lock(mu_);
  *created = false;
  if (dbs_.count(name)) {
    if (if_not_exists) return Status::OK();
    return SqlError(ErrorCode::kDbCreateExists, "Can't create database '{}'; database exists", name);
  }
  pb::Database m;
  m.set_name(name);
  SHALE_RETURN_IF_ERROR(meta_->Put(DbKey(name), m.SerializeAsString()));
  dbs_[name];
  *created = true;
  return Status::OK();
}

Status Catalog::DropDatabase(const std::string& name, bool if_exists,
                             std::vector<std::shared_ptr<const TableDef>>* dropped) {
  std::lock_guard lock(mu_);
  auto it = dbs_.find(name);
  if (it == dbs_.end()) {
    if (if_exists) return Status::OK();
    return SqlError(ErrorCode::kDbDropExists, "Can't drop database '{}'; database doesn't exist",
                    name);
  }
  std::vector<storage::MetaStore::Change> batch;
  for (auto& [tname, t] : it->second) {
    batch.emplace_back(TableKey(name, tname), std::nullopt);
    batch.emplace_back(RowIdKey(t->id), std::nullopt);
    row_ids_.erase(t->id);
    dropped->push_back(t);
  }
  batch.emplace_back(DbKey(name), std::nullopt);
  SHALE_RETURN_IF_ERROR(meta_->Write(batch));
  dbs_.erase(it);
  return Status::OK();
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
  std::lock_guard lock(mu_);
  *created = false;
  auto d = dbs_.find(def.db);
  if (d == dbs_.end()) return SqlError(ErrorCode::kBadDb, "Unknown database '{}'", def.db);
  if (d->second.count(def.name)) {
    if (if_not_exists) return Status::OK();
    return SqlError(ErrorCode::kTableExists, "Table '{}' already exists", def.name);
  }
  SHALE_RETURN_IF_ERROR(meta_->Put(TableKey(def.db, def.name), SerializeTable(def)));
  std::string name = def.name;
  d->second[name] = std::make_shared<const TableDef>(std::move(def));
  *created = true;
  return Status::OK();
}

Status Catalog::DropTable(const std::string& db, const std::string& name) {
  std::lock_guard lock(mu_);
  auto d = dbs_.find(db);
  if (d == dbs_.end() || !d->second.count(name)) {
    return SqlError(ErrorCode::kBadTable, "Unknown table '{}.{}'", db, name);
  }
  uint64_t id = d->second[name]->id;
  SHALE_RETURN_IF_ERROR(meta_->Write({{TableKey(db, name), std::nullopt}, {RowIdKey(id), std::nullopt}}));
  d->second.erase(name);
  row_ids_.erase(id);
  return Status::OK();
}

Status Catalog::ReplaceTable(const std::shared_ptr<const TableDef>& expected, TableDef def) {
  std::lock_guard lock(mu_);
  auto d = dbs_.find(def.db);
  if (d == dbs_.end() || !d->second.count(def.name)) {
    return SqlError(ErrorCode::kNoSuchTable, "Table '{}.{}' doesn't exist", def.db, def.name);
  }
  auto t = d->second.find(def.name);
  if (t->second != expected) {
    return SqlError(ErrorCode::kTableDefChanged, "Table definition has changed, please retry transaction");
  }
  SHALE_RETURN_IF_ERROR(meta_->Put(TableKey(def.db, def.name), SerializeTable(def)));
  t->second = std::make_shared<const TableDef>(std::move(def));
  return Status::OK();
}

Status Catalog::RenameTable(const std::string& db, const std::string& name, const std::string& new_db,
                            const std::string& new_name) {
  std::lock_guard lock(mu_);
  auto d = dbs_.find(db);
  if (d == dbs_.end() || !d->second.count(name)) {
    return SqlError(ErrorCode::kNoSuchTable, "Table '{}.{}' doesn't exist", db, name);
  }
  auto nd = dbs_.find(new_db);
  if (nd == dbs_.end()) return SqlError(ErrorCode::kBadDb, "Unknown database '{}'", new_db);
  if (nd->second.count(new_name)) {
    return SqlError(ErrorCode::kTableExists, "Table '{}' already exists", new_name);
  }
  TableDef def = *d->second[name];
  def.db = new_db;
  def.name = new_name;
  SHALE_RETURN_IF_ERROR(meta_->Write({{TableKey(db, name), std::nullopt},
                                      {TableKey(new_db, new_name), SerializeTable(def)}}));
  d->second.erase(name);
  nd->second[new_name] = std::make_shared<const TableDef>(std::move(def));
  return Status::OK();
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
  std::lock_guard lock(mu_);
  uint64_t id = next_id_;
  SHALE_RETURN_IF_ERROR(meta_->Put(kNextIdKey, std::to_string(id + 1)));
  next_id_ = id + 1;
  return id;
}

Result<int64_t> Catalog::AllocateRowIds(uint64_t table_id, int64_t count) {
  if (count < 1) return Status::InvalidArgument("row id count must be positive");
  std::lock_guard lock(mu_);
  auto it = row_ids_.find(table_id);
  if (it == row_ids_.end()) {
    // First use since start-up: continue after everything reserved before.
    RowIdRange r;
    std::string stored;
    Status st = meta_->Get(RowIdKey(table_id), &stored);
    if (st.ok()) {
      r.next = std::stoll(stored);
    } else if (st.IsNotFound()) {
      r.next = 1;
    } else {
      return st;
    }
    r.limit = r.next;
    it = row_ids_.emplace(table_id, r).first;
  }
  RowIdRange& r = it->second;
  if (r.limit - r.next < count) {
    if (INT64_MAX - r.next < count + kRowIdBatch) {
      return SqlError(ErrorCode::kDataOutOfRange, "row ids of table {} are exhausted", table_id);
    }
    int64_t limit = r.next + std::max(count, kRowIdBatch);
    SHALE_RETURN_IF_ERROR(meta_->Put(RowIdKey(table_id), std::to_string(limit)));
    r.limit = limit;
  }
  int64_t first = r.next;
  r.next += count;
  return first;
}

}  // namespace shale::catalog

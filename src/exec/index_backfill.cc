// Index builds: the entries of a new secondary index from the table's
// rows, written at once (BuildIndex) or backfilled from a snapshot while
// writers go on (BackfillIndex), and the UNIQUE check of an index's
// entries (executor.h).
#include <map>
#include <set>

#include "src/common/errors.h"
#include "src/exec/executor.h"
#include "src/exec/operator.h"
#include "src/exec/table_writer.h"

namespace shale::exec {

using internal::DupEntryText;
using internal::HasNull;
using internal::LocalSlice;
using internal::RowCorrupt;
using internal::SliceIndexOf;

namespace {

// The entries of secondary index `index` (slice by slice: entry key ->
// encoded primary key) for `rows`, or else for the rows of `table`'s
// primary representation: their newest committed versions, or those
// visible at `reader`'s snapshot when it is given. ER_DUP_ENTRY (1062) if
// `index` is UNIQUE and two rows have equal key values without NULLs.
Result<std::vector<std::map<std::string, std::string>>> IndexEntries(Engine* engine, const catalog::TableDef& table,
                                                                     const catalog::RepresentationDef& index,
                                                                     const std::vector<Row>* rows,
                                                                     txn::Transaction* reader) {
  std::vector<std::map<std::string, std::string>> entries(index.slices.size());
  std::set<std::string> unique_seen;  // encoded key values
  auto add = [&](const Row& row) -> Status {
    std::vector<Value> values = catalog::RepresentationKeyValues(table, index, row);
    std::vector<Value> pk = catalog::PrimaryKeyValues(table, row);
    if (index.unique && !HasNull(values)) {
      if (!unique_seen.insert(catalog::EncodeKey(values)).second) {
        return SqlError(ErrorCode::kDupEntry, "Duplicate entry '{}' for key '{}.{}'",
                        DupEntryText(catalog::RepresentationKeyValues(index, row)), table.name, index.name);
      }
    }
    std::string pk_row;
    EncodeRow(pk, &pk_row);
    entries[SliceIndexOf(index, values)][catalog::IndexEntryKey(values, pk)] = std::move(pk_row);
    return Status::OK();
  };
  if (rows) {
    for (const Row& row : *rows) SHALE_RETURN_IF_ERROR(add(row));
    return entries;
  }
  for (const catalog::SliceDef& def : table.primary.slices) {
    SHALE_ASSIGN_OR_RETURN(txn::SliceHandle slice, LocalSlice(engine, table, def));
    auto it = reader ? reader->NewIterator(slice, storage::KeyRange::All(), /*latest=*/false)
                     : txn::ScanLatest(slice, storage::KeyRange::All());
    for (; it->Valid(); it->Next()) {
      Row row;
      Status decoded = DecodeRow(it->value(), &row);
      if (!decoded.ok()) return RowCorrupt(table, def, decoded);
      SHALE_RETURN_IF_ERROR(add(row));
    }
    SHALE_RETURN_IF_ERROR(it->status());
  }
  return entries;
}

// Entries per Apply request of a backfill (keeps gRPC messages small).
constexpr size_t kBackfillBatchEntries = 4096;

}  // namespace

Status BuildIndex(Engine* engine, const catalog::TableDef& table,
                  const catalog::RepresentationDef& index, const std::vector<Row>* rows) {
  SHALE_ASSIGN_OR_RETURN(auto entries, IndexEntries(engine, table, index, rows, nullptr));
  // All of the index's slices in one atomic write.
  std::vector<storage::WriteBatch> batches(entries.size());
  std::vector<std::pair<storage::SliceId, const storage::WriteBatch*>> writes;
  txn::Placement placement;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].empty()) continue;
    for (auto& [key, value] : entries[i]) batches[i].Put(key, std::move(value));
    SHALE_ASSIGN_OR_RETURN(txn::SliceHandle slice, LocalSlice(engine, table, index.slices[i]));
    writes.emplace_back(slice.id, &batches[i]);
    if (slice.replicas) placement[slice.id] = *slice.replicas;
  }
  if (writes.empty()) return Status::OK();
  return engine->txn()->CommitBatches(writes, &placement);
}

Status BackfillIndex(Engine* engine, const catalog::TableDef& table, const catalog::RepresentationDef& index,
                     txn::Transaction* reader) {
  SHALE_ASSIGN_OR_RETURN(const uint64_t ts, reader->Snapshot());
  SHALE_ASSIGN_OR_RETURN(auto entries, IndexEntries(engine, table, index, nullptr, reader));
  txn::DataRouter* router = engine->txn()->router();
  const std::string& self = engine->options().node_name;
  // Per replica node, in batches; every version at the snapshot timestamp.
  for (size_t i = 0; i < entries.size(); ++i) {
    const catalog::SliceDef& slice = index.slices[i];
    auto it = entries[i].begin();
    while (it != entries[i].end()) {
      txn::WriteSet batch;
      txn::SliceWrites& keys = batch[slice.id];
      for (; it != entries[i].end() && keys.size() < kBackfillBatchEntries; ++it) keys.emplace(it->first, it->second);
      for (const std::string& node : slice.WriteReplicas()) {
        Status st = node == self || router == nullptr ? engine->txn()->ApplyAt(ts, batch)
                                                      : router->Apply(node, nullptr, ts, batch, {});
        SHALE_RETURN_IF_ERROR(st);
      }
    }
  }
  return Status::OK();
}

Status CheckUniqueEntries(Engine* engine, const catalog::TableDef& table, const catalog::RepresentationDef& index) {
  if (!index.unique) return Status::OK();
  for (const catalog::SliceDef& def : index.slices) {
    SHALE_ASSIGN_OR_RETURN(txn::SliceHandle slice, LocalSlice(engine, table, def));
    auto it = txn::ScanLatest(slice, storage::KeyRange::All());
    std::string previous;  // the encoded key values of the last entry without NULLs
    for (; it->Valid(); it->Next()) {
      std::string_view rest = it->key();
      bool has_null = false;
      for (int column : index.key_columns) {
        Value v;
        Status decoded = DecodeKey(&rest, table.columns[column].type, &v);
        if (!decoded.ok()) return RowCorrupt(table, def, decoded);
        has_null = has_null || v.is_null();
      }
      if (has_null) continue;
      std::string values(it->key().substr(0, it->key().size() - rest.size()));
      if (values == previous) {
        // Two rows hold these values: name them as the row of this entry.
        Row pk;
        Status decoded = DecodeRow(it->value(), &pk);
        if (!decoded.ok()) return RowCorrupt(table, def, decoded);
        std::string text = "?";
        SHALE_ASSIGN_OR_RETURN(txn::SliceHandle pk_slice,
                               LocalSlice(engine, table, table.primary.slices[SliceIndexOf(table.primary, pk)]));
        std::string row_value;
        Row row;
        if (txn::ReadLatest(pk_slice, catalog::EncodeKey(pk), &row_value).ok() && DecodeRow(row_value, &row).ok()) {
          text = DupEntryText(catalog::RepresentationKeyValues(index, row));
        }
        return SqlError(ErrorCode::kDupEntry, "Duplicate entry '{}' for key '{}.{}'", text, table.name, index.name);
      }
      previous = std::move(values);
    }
    SHALE_RETURN_IF_ERROR(it->status());
  }
  return Status::OK();
}

}  // namespace shale::exec

// Index builds: the entries of a new secondary index from the table's
// rows, written at once (BuildIndex) or backfilled from a snapshot while
// writers go on (BackfillIndex), and the UNIQUE check of an index's
// entries (executor.h).
#include <optional>

#include "src/common/errors.h"
#include "src/exec/executor.h"
#include "src/exec/operator.h"
#include "src/exec/sorted_index_entries.h"
#include "src/exec/table_writer.h"

namespace shale::exec {

using internal::DupEntryText;
using internal::HasNull;
using internal::LocalSlice;
using internal::RowCorrupt;
using internal::SliceIndexOf;

namespace {

// The entries of secondary index `index`, slice by slice and sorted by key
// (entry key -> encoded primary key), for `rows`, or else for the rows of
// `table`'s primary representation: their newest committed versions, or
// those visible at `reader`'s snapshot when it is given. ER_DUP_ENTRY
// (1062) if `index` is UNIQUE and two rows have equal key values without
// NULLs, naming the values of the first row (in scan order) whose values an
// earlier row had.
Result<std::vector<SortedIndexEntries>> IndexEntries(Engine* engine, const catalog::TableDef& table,
                                                     const catalog::RepresentationDef& index,
                                                     const std::vector<Row>* rows, txn::Transaction* reader) {
  std::vector<SortedIndexEntries> entries(index.slices.size());
  uint64_t order = 0;
  std::string key, pk_row, shown;
  auto add = [&](const Row& row) {
    std::vector<Value> values = catalog::RepresentationKeyValues(table, index, row);
    std::vector<Value> pk = catalog::PrimaryKeyValues(table, row);
    key.clear();
    for (const Value& v : values) AppendKey(v, &key);
    const size_t values_size = key.size();
    for (const Value& v : pk) AppendKey(v, &key);  // catalog::IndexEntryKey, without a new string
    pk_row.clear();
    EncodeRow(pk, &pk_row);
    const bool unique_candidate = index.unique && !HasNull(values);
    shown.clear();
    if (unique_candidate) EncodeRow(catalog::RepresentationKeyValues(index, row), &shown);
    entries[SliceIndexOf(index, values)].Add(key, values_size, unique_candidate, pk_row, shown, order++);
  };
  if (rows) {
    for (const Row& row : *rows) add(row);
  } else {
    for (const catalog::SliceDef& def : table.primary.slices) {
      SHALE_ASSIGN_OR_RETURN(txn::SliceHandle slice, LocalSlice(engine, table, def));
      auto it = reader ? reader->NewIterator(slice, storage::KeyRange::All(), /*latest=*/false)
                       : txn::ScanLatest(slice, storage::KeyRange::All());
      Row row;
      for (; it->Valid(); it->Next()) {
        Status decoded = DecodeRow(it->value(), &row);
        if (!decoded.ok()) return RowCorrupt(table, def, decoded);
        add(row);
      }
      SHALE_RETURN_IF_ERROR(it->status());
    }
  }
  std::optional<SortedIndexEntries::Duplicate> first;
  for (SortedIndexEntries& slice : entries) {
    slice.Sort();
    if (!index.unique) continue;
    std::optional<SortedIndexEntries::Duplicate> dup = slice.FirstDuplicate();
    if (dup && (!first || dup->order < first->order)) first = std::move(dup);
  }
  if (first) {
    Row values;
    std::string text = "?";
    if (DecodeRow(first->shown, &values).ok()) text = DupEntryText(values);
    return SqlError(ErrorCode::kDupEntry, "Duplicate entry '{}' for key '{}.{}'", text, table.name, index.name);
  }
  return entries;
}

// Entries per Apply request of a backfill (keeps gRPC messages small).
constexpr size_t kBackfillBatchEntries = 4096;

}  // namespace

Status BuildIndex(Engine* engine, const catalog::TableDef& table,
                  const catalog::RepresentationDef& index, const std::vector<Row>* rows) {
  SHALE_ASSIGN_OR_RETURN(auto entries, IndexEntries(engine, table, index, rows, nullptr));
  // All of the index's slices in one atomic write, each in key order.
  std::vector<std::pair<storage::SliceId, txn::TxnManager::SliceFill>> fills;
  txn::Placement placement;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].empty()) continue;
    SHALE_ASSIGN_OR_RETURN(txn::SliceHandle slice, LocalSlice(engine, table, index.slices[i]));
    txn::TxnManager::SliceFill& fill = fills.emplace_back(slice.id, txn::TxnManager::SliceFill()).second;
    fill.reserve(entries[i].size());
    for (size_t e = 0; e < entries[i].size(); ++e) fill.emplace_back(entries[i].key(e), entries[i].value(e));
    if (slice.replicas) placement[slice.id] = *slice.replicas;
  }
  if (fills.empty()) return Status::OK();
  return engine->txn()->FillNewSlices(fills, &placement);
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
    size_t e = 0;
    while (e < entries[i].size()) {
      txn::WriteSet batch;
      txn::SliceWrites& keys = batch[slice.id];
      for (; e < entries[i].size() && keys.size() < kBackfillBatchEntries; ++e) {
        keys.emplace_hint(keys.end(), entries[i].key(e), entries[i].value(e));  // in key order: appends
      }
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

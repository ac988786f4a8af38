// The helpers every row operator uses to read, lock and check rows
// (operator.h).
#include "src/exec/operator.h"

#include "src/common/errors.h"
#include "src/common/log.h"

namespace shale::exec::internal {

Status ReadRow(const txn::SliceHandle& slice, std::string_view key, bool latest, std::string* value) {
  if (txn::Transaction* t = CurrentTxn()) return t->Get(slice, key, latest, value);
  return txn::ReadLatest(slice, key, value);
}

std::unique_ptr<storage::SliceIterator> ReadRange(const txn::SliceHandle& slice, const storage::KeyRange& range,
                                                  bool latest, const std::string* filter) {
  if (txn::Transaction* t = CurrentTxn()) return t->NewIterator(slice, range, latest, filter);
  return txn::ScanLatest(slice, range, filter);
}

std::optional<txn::LockMode> LockingReadOf(const catalog::TableDef& table) {
  if (!CurrentTxn() || !t_statement->locking_read) return std::nullopt;
  if (t_statement->lock_table_id != 0 && t_statement->lock_table_id != table.id) return std::nullopt;
  return t_statement->locking_read;
}

std::string LockName(char kind, uint64_t id, std::string_view key) {
  std::string name(1, kind);
  for (int i = 7; i >= 0; --i) name.push_back(static_cast<char>((id >> (8 * i)) & 0xff));
  name.append(key);
  return name;
}

Status AcquireLock(std::string name, txn::LockMode mode, const txn::SliceHandle* at, const std::string* read_key) {
  txn::Transaction* t = CurrentTxn();
  if (!t) return Status::OK();
  return t->Lock(std::move(name), mode, t_statement->lock_wait_timeout, t_statement->interrupt, at, read_key);
}

Status LockRow(const catalog::TableDef& table, const txn::SliceHandle& slice, std::string_view pk_key,
               txn::LockMode mode) {
  return AcquireLock(LockName('R', table.id, pk_key), mode, &slice);
}

Status LockAndReadRow(const catalog::TableDef& table, const txn::SliceHandle& slice, std::string_view pk_key,
                      txn::LockMode mode, std::string* value) {
  const std::string key(pk_key);
  SHALE_RETURN_IF_ERROR(AcquireLock(LockName('R', table.id, pk_key), mode, &slice, &key));
  return ReadRow(slice, pk_key, /*latest=*/true, value);
}

Status RowCorrupt(const catalog::TableDef& table, const catalog::SliceDef& def, const Status& st) {
  log::Error("unreadable row in slice {} of table {}.{}: {}", def.id, table.db, table.name,
             st.ToString());
  return Status::Corruption(fmt::format("unreadable row in slice {} of table {}.{}", def.id,
                                        table.db, table.name));
}

}  // namespace shale::exec::internal

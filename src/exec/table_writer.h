// TableWriter: the writes of one INSERT, UPDATE or DELETE to one table,
// checked against the statement's own earlier rows and written at the end
// (execute_write.cc), and the conversion of rows to their column types.
//
// Thread-safety: a TableWriter belongs to one statement on one thread; it
// reads the statement's transaction through operator.h's t_statement.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shale/status.h"
#include "src/catalog/catalog.h"
#include "src/common/value.h"
#include "src/exec/engine.h"
#include "src/txn/transaction.h"

namespace shale::exec::internal {

// "1" or "1-abc" as in MySQL's ER_DUP_ENTRY message.
std::string DupEntryText(const std::vector<Value>& key);

// `v` converted to the type of column `col`, as a write of row number `row`
// of the statement: in a strict sql_mode an error for a value that does
// not fit, else adjusted with a warning (CoerceToColumnNonStrict).
Result<Value> CoerceForMode(const Value& v, const catalog::ColumnDef& col, uint64_t row);

// Converts every column of `row` to its column type and checks NOT NULL, as
// a write of row number `n` of the statement (for messages).
Status CoerceRow(const catalog::TableDef& table, uint64_t n, Row* row);

bool HasNull(const std::vector<Value>& values);

// The slice of `rep` that owns a key starting with `key_values`.
size_t SliceIndexOf(const catalog::RepresentationDef& rep, const std::vector<Value>& key_values);

// The writes of one statement to one table: every representation (0 is the
// primary, i + 1 secondary index i) gets a map of pending changes that
// overlays the stored slices, so checks see the statement's own earlier
// rows; Commit() writes one batch per slice.
//
// While an online index build lets writes go on (TableDef::
// ddl_allows_writes, src/exec/online_ddl.h), the pending indexes follow the
// published ones (1 + indexes.size() + i is pending index i): every change
// writes their entries too, but no UNIQUE check or lock reads them.
class TableWriter {
 public:
  TableWriter(Engine* engine, const catalog::TableDef& table);

  const catalog::RepresentationDef& Rep(size_t r) const {
    if (r == 0) return table_.primary;
    return r < published_ ? table_.indexes[r - 1] : table_.pending_indexes[r - published_];
  }

  // Whether primary key `key` (in slice `slice_index`) holds a row.
  Result<bool> RowExists(const std::string& key, size_t slice_index);

  // The row stored under primary key `pk`, as the statement's writes so far
  // leave it, or nullopt.
  Result<std::optional<Row>> GetRow(const std::vector<Value>& pk);

  // A UNIQUE index (its position r in 1..) with an entry, other than those
  // the statement deleted, holding the index key values of `row` (none
  // NULL), and that entry's primary-key values; nullopt if none.
  struct Conflict {
    size_t rep;
    std::vector<Value> pk;
  };
  // `replaced`: the row `row` replaces (same primary key), whose entries
  // stay where its index key values are unchanged; those are not checked.
  Result<std::optional<Conflict>> UniqueConflict(const Row& row, const Row* replaced = nullptr);

  // ER_DUP_ENTRY for `row`'s key in representation r.
  Status DupEntry(size_t r, const Row& row) const;

  // ER_DUP_ENTRY if a UNIQUE index already has an entry with the index key
  // values of `row` (none NULL).
  Status CheckUnique(const Row& row, const Row* replaced = nullptr);

  // Adds or removes `row` (a full, converted table row) in every
  // representation. `fresh`: the caller found no stored row under `row`'s
  // primary key while holding its lock (a new row), so neither that key nor
  // the row's index entries have a live committed version; the commit then
  // leaves them out of the garbage collector's queue (txn::FreshKeys). A
  // key the statement changed before keeps that change's freshness.
  void Put(const Row& row, bool fresh = false) { Change(row, true, fresh); }
  void Delete(const Row& row) { Change(row, false, false); }
  // Replaces `old_row` by `new_row` (full, converted table rows with the
  // same primary key): the primary key's entry gets the new row, and a
  // published index whose encoded entry key `new_row` leaves unchanged is
  // not written (its entry, key and primary-key value, stays as stored).
  // Pending indexes are written as by Delete then Put.
  void Update(const Row& old_row, const Row& new_row);

  // Exclusive locks on `row`'s primary key and on its values in every
  // UNIQUE index (none NULL), held to the end of the transaction: taken
  // before a row is checked and written, so concurrent writers of one key
  // (or one unique value) go one after the other. Not asked for again: the
  // primary key's lock when `held` says this statement's locking read took
  // it, and the keys `row` shares with `locked` (a row whose keys were
  // locked already, as the old row of an update).
  enum class Held { kNone, kPrimaryKey };
  Status LockRowKeys(const Row& row, Held held = Held::kNone, const Row* locked = nullptr);

  // Into the statement's transaction's write set (it reaches the slices at
  // COMMIT); without a transaction, every representation's batches to the
  // store as one atomic write.
  Status Commit();

 private:
  // One slice's changes, in key order (nullopt: delete), and the keys
  // whose first change in the statement was a fresh put (see Put; views
  // of the map's keys).
  using SliceChanges = txn::SliceWrites;
  struct Deferred {
    std::string key;
    std::optional<std::string> value;
    bool fresh;
  };
  struct SliceState {
    SliceChanges changes;
    std::vector<std::string_view> fresh;
    // A representation the statement never reads back (a non-UNIQUE or a
    // pending index): changes to keys below the map's last one wait in
    // `deferred`, in the order made, and join the map sorted at Commit
    // (MergeDeferred) instead of a search of the map each. Every change of
    // a deferred key is deferred (the map's last key only grows), so the
    // deferred ones are the later ones.
    bool write_only = false;
    std::vector<Deferred> deferred;
  };

  Result<txn::SliceHandle> SliceAt(size_t r, size_t index);

  void Change(const Row& row, bool put, bool fresh);
  // Records a change of `key` in `changes`; a key changed before in this
  // statement keeps the freshness of its first change.
  static void Set(SliceState& slice, std::string key, std::optional<std::string> value, bool fresh);
  static void MergeDeferred(SliceState& slice);

  Engine* engine_;
  const catalog::TableDef& table_;
  const size_t published_;  // the primary and the published indexes
  // [representation][slice index]: one map per slice, so rows read slice
  // by slice, each in key order, append to their map without a search
  // (src/common/appending_map.h).
  std::vector<std::vector<SliceState>> changes_;
  std::vector<std::vector<std::optional<txn::SliceHandle>>> slices_;
};

}  // namespace shale::exec::internal

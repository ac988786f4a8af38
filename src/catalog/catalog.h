// Catalog: the databases and tables of the cluster, and for each table its
// representations and their slices. Persisted in the node's MetaStore
// (RocksDB) as protobuf messages (src/catalog/catalog.proto,
// docs/formats/catalog.md); later it becomes state replicated by Raft.
//
// Names: database and table names are case-sensitive (MySQL's
// lower_case_table_names=0); column names are case-insensitive.
//
// Invariants:
//  1. Every change is durable in the MetaStore before the call returns OK.
//  2. TableDef objects are immutable once published; a change publishes a
//     new one, so readers holding a shared_ptr see a consistent definition.
//  3. Slice ids are never reused.
//
// Thread-safety: all methods may be called concurrently.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shale/status.h"
#include "src/common/value.h"
#include "storage/meta_store.h"
#include "storage/slice.h"

namespace shale::catalog {

struct ColumnDef {
  std::string name;
  SqlType type;
  bool nullable = true;
  std::optional<Value> default_value;  // absent: no DEFAULT clause
  // The hidden row id that keys a table created without a PRIMARY KEY
  // (kHiddenRowIdColumn, BIGINT NOT NULL, the last column). Never shown.
  bool hidden = false;
  // DEFAULT CURRENT_TIMESTAMP[(fsp)] (DATE, TIME, DATETIME, TIMESTAMP) / ON
  // UPDATE CURRENT_TIMESTAMP[(fsp)] (DATETIME, TIMESTAMP); fsp: the column's.
  // default_now leaves default_value empty. (After `hidden`, so aggregate
  // initializers of the fields above keep their meaning.)
  bool default_now = false;
  bool on_update_now = false;
};

// Name of the hidden row-id column. Users cannot name a column this way in a
// table without a primary key (1060).
inline constexpr std::string_view kHiddenRowIdColumn = "__shale_row_id";
// Row ids are reserved in the MetaStore this many at a time.
inline constexpr int64_t kRowIdBatch = 1024;

// One slice of a representation: rows whose distribution hash h satisfies
// hash_begin <= h <= hash_end.
struct SliceDef {
  storage::SliceId id = 0;
  uint64_t hash_begin = 0;
  uint64_t hash_end = 0;
  std::vector<std::string> replicas;  // node names; the first one ranks
};

// A representation: the rows of a table ordered by `key_columns`, hash
// distributed on the first `distribution_columns` of them.
//
// A secondary index is a representation whose stored key is the encoded
// values of its key_columns followed by the table's primary-key values
// (IndexEntryKey), so entries are unique even when index values repeat, and
// whose stored value is the primary-key values as an encoded row (to find
// the row in the primary representation).
struct RepresentationDef {
  std::string name;               // "PRIMARY" for the primary key, else the index name
  std::vector<int> key_columns;   // indexes into TableDef::columns
  int distribution_columns = 1;
  std::vector<SliceDef> slices;   // ordered by hash_begin; cover [0, 2^64)
  bool unique = false;            // secondary index: no two rows with equal non-NULL key values

  // The slice owning distribution hash `h`.
  const SliceDef& SliceForHash(uint64_t h) const;
};

struct TableDef {
  uint64_t id = 0;
  std::string db;
  std::string name;
  std::vector<ColumnDef> columns;
  RepresentationDef primary;
  std::vector<RepresentationDef> indexes;  // secondary indexes, in definition order
  // Page compression of the table's slices on disk (table option
  // COMPRESSION=): "" for none, "zlib" or "zstd".
  std::string compression;

  // Index of the column named `name` (case-insensitive), or -1.
  int FindColumn(std::string_view name) const;
  // Position in `indexes` of the index named `name` (case-insensitive), or -1.
  int FindIndex(std::string_view name) const;
};

// The encoded primary key (memcomparable, src/common/value.h) of the
// primary-key values `key_values`, in key column order.
std::string EncodeKey(const std::vector<Value>& key_values);
// The distribution hash of a row whose representation key starts with
// `key_values` (at least `distribution_columns` of them).
uint64_t DistributionHash(const RepresentationDef& rep, const std::vector<Value>& key_values);
// The primary-key values of a full table row, in key form (KeyForm in
// src/common/value.h: a string column's value as its collation weight
// string, an ENUM's as its index), so that keys equal under the columns'
// collations encode alike. These are what keys, distribution hashes and
// the primary-key rows of index entries hold.
std::vector<Value> PrimaryKeyValues(const TableDef& table, const Row& row);
// The values of `rep`'s key columns in a full table row, in key form.
std::vector<Value> RepresentationKeyValues(const TableDef& table, const RepresentationDef& rep,
                                           const Row& row);
// The values of `rep`'s key columns in a full table row, as stored (for
// messages such as "Duplicate entry").
std::vector<Value> RepresentationKeyValues(const RepresentationDef& rep, const Row& row);
// The stored key of secondary-index entry for a row: its index key values
// then its primary-key values, encoded.
std::string IndexEntryKey(const std::vector<Value>& index_values,
                          const std::vector<Value>& primary_values);

class Catalog {
 public:
  // Loads the catalog kept in `meta` (empty on a new node).
  static Result<std::unique_ptr<Catalog>> Load(storage::MetaStore* meta);

  // ER_DB_CREATE_EXISTS (1007) if it exists and !if_not_exists.
  Status CreateDatabase(const std::string& name, bool if_not_exists, bool* created);
  // Removes the database and its tables, returning the dropped tables so the
  // caller can drop their slices. ER_DB_DROP_EXISTS (1008) if absent and
  // !if_exists.
  Status DropDatabase(const std::string& name, bool if_exists,
                      std::vector<std::shared_ptr<const TableDef>>* dropped);
  bool DatabaseExists(const std::string& name) const;
  std::vector<std::string> ListDatabases() const;

  // ER_NO_SUCH_TABLE (1146) if the table or its database is absent (MySQL
  // reports a table of a missing database as a missing table).
  Result<std::shared_ptr<const TableDef>> GetTable(const std::string& db,
                                                   const std::string& name) const;
  // Publishes `def` (its id and slice ids already allocated with NextId()).
  // ER_TABLE_EXISTS_ERROR (1050) if it exists and !if_not_exists.
  Status CreateTable(TableDef def, bool if_not_exists, bool* created);
  // ER_BAD_TABLE_ERROR (1051) if absent.
  Status DropTable(const std::string& db, const std::string& name);
  // Publishes a changed definition of an existing table (same db, name and
  // id), e.g. with an index added or dropped. Fails with
  // ER_TABLE_DEF_CHANGED (1412) unless the published definition is still
  // `expected` (the one the change was computed from).
  Status ReplaceTable(const std::shared_ptr<const TableDef>& expected, TableDef def);
  // Renames table db.name to new_db.new_name (its id, rows and slices stay).
  // ER_NO_SUCH_TABLE (1146) if absent, ER_TABLE_EXISTS_ERROR (1050) if the
  // new name is taken, ER_BAD_DB_ERROR (1049) if new_db is absent.
  Status RenameTable(const std::string& db, const std::string& name, const std::string& new_db,
                     const std::string& new_name);
  // ER_BAD_DB_ERROR (1049) if the database is absent.
  Result<std::vector<std::string>> ListTables(const std::string& db) const;

  // A fresh id for a table or slice, durable before it is returned.
  Result<uint64_t> NextId();

  // Reserves `count` consecutive row ids for the hidden primary key of table
  // `table_id` and returns the first. Ids are reserved durably in batches of
  // at least kRowIdBatch, so ids handed out before a restart are never
  // handed out again (ids reserved but unused are skipped).
  Result<int64_t> AllocateRowIds(uint64_t table_id, int64_t count);

 private:
  explicit Catalog(storage::MetaStore* meta) : meta_(meta) {}

  storage::MetaStore* meta_;
  mutable std::mutex mu_;
  std::map<std::string, std::map<std::string, std::shared_ptr<const TableDef>>> dbs_;  // GUARDED_BY(mu_)
  uint64_t next_id_ = 1;  // GUARDED_BY(mu_)
  struct RowIdRange {
    int64_t next = 0;   // next id to hand out
    int64_t limit = 0;  // first id not reserved
  };
  std::map<uint64_t, RowIdRange> row_ids_;  // GUARDED_BY(mu_); by table id
};

}  // namespace shale::catalog

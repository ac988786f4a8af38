// Catalog: the databases and tables of the cluster, and for each table its
// representations and their slices. Persisted in the node's MetaStore
// (RocksDB) as protobuf messages (src/catalog/catalog.proto,
// docs/formats/catalog.md).
//
// Every change is a command (pb::Command, src/catalog/catalog_command.h).
// The public mutators build one and hand it to the submitter: with a
// cluster, shaled's submitter proposes it to the Raft metadata log and
// returns once it is applied on this node (every node applies it, in log
// order, through ApplyCommand); without one (unit tests, tools) the command
// is applied here at once. Either way the checks (exists, version) run at
// apply time, so two nodes racing to create one table get one winner and
// one ER_TABLE_EXISTS_ERROR.
//
// Names: database and table names are case-sensitive (MySQL's
// lower_case_table_names=0); column names are case-insensitive.
//
// Invariants:
//  1. Every change is durable in the MetaStore before the call returns OK.
//  2. TableDef objects are immutable once published; a change publishes a
//     new one, so readers holding a shared_ptr see a consistent definition.
//  3. Slice ids are never reused.
//  4. Commands are applied in one order (the log's); each successful one is
//     one atomic MetaStore batch that also records its log index under
//     kAppliedIndexKey, so a restart re-applies only later entries.
//  5. The table listener sees every change of a table, in apply order:
//     kPrepare under the catalog lock before the write, kDone after the
//     catalog lock is released.
//
// Thread-safety: all methods may be called concurrently.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
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
  // AUTO_INCREMENT: an integer column, the first column of some key; at
  // most one per table. Values come from the table's kAutoIncrement id
  // counter (Catalog::ReserveIds).
  bool auto_increment = false;
};

// Name of the hidden row-id column. Users cannot name a column this way in a
// table without a primary key (1060).
inline constexpr std::string_view kHiddenRowIdColumn = "__shale_row_id";
// Row ids are reserved in the MetaStore this many at a time.
inline constexpr int64_t kRowIdBatch = 1024;
// Replicas per slice when CREATE TABLE does not say REPLICAS=n (capped at
// the number of cluster members).
inline constexpr uint32_t kDefaultReplicas = 2;
// MetaStore key of the last Raft log index applied to the catalog and the
// accounts (decimal). DO NOT CHANGE.
inline constexpr std::string_view kAppliedIndexKey = "catalog/applied_index";

// The per-table id counters the catalog hands out ids from. Stored under
// their own MetaStore keys (docs/formats/catalog.md). DO NOT CHANGE values.
enum class IdCounter : uint8_t {
  kRowId = 0,          // the hidden row id of a table without a PRIMARY KEY
  kAutoIncrement = 1,  // the table's AUTO_INCREMENT column
};

// A replica the rebalancer is filling (docs/cluster.md "Reprotection and
// rebalancing"): it receives every write from the moment the slice map
// names it, serves no reads and does not count toward protection.
struct BuildingReplica {
  std::string node;
  uint64_t task_id = 0;    // the RebalanceTask filling it
  std::string source;      // the serving replica it is copied from
  int64_t started_ms = 0;  // wall clock when it was added
  bool operator==(const BuildingReplica&) const = default;
};

// The snapshot timestamp a building replica's storage slice is created with
// (SliceStore::CreateBuildingSlice) when the slice map names it: the copy's
// snapshot is chosen later, by the source, once every node writes the new
// replica (docs/cluster.md "Reprotection and rebalancing"), so the stored
// value only says "open"; each streamed chunk carries its own snapshot.
inline constexpr uint64_t kOpenBuildSnapshot = UINT64_MAX;

// One slice of a representation: rows whose distribution hash h satisfies
// hash_begin <= h <= hash_end.
struct SliceDef {
  storage::SliceId id = 0;
  uint64_t hash_begin = 0;
  uint64_t hash_end = 0;
  std::vector<std::string> replicas;  // serving replicas (node names); the first one ranks
  std::vector<BuildingReplica> building = {};  // replicas being filled
  // replicas then the building replicas' nodes: where a commit writes.
  // Kept by the catalog (SyncWriteReplicas) whenever `building` changes.
  std::vector<std::string> write_replicas = {};

  // Every node a commit writing this slice must reach: the serving
  // replicas, ranking one first, then the building ones.
  const std::vector<std::string>& WriteReplicas() const { return building.empty() ? replicas : write_replicas; }
  // Whether `node` holds a replica, serving or building.
  bool PlacedOn(const std::string& node) const;
  // Recomputes write_replicas from replicas and building.
  void SyncWriteReplicas();
};

// A rebalancer task as system.rebalancer shows it (catalog.proto
// RebalanceTask). Task records are catalog state, replicated with it, so
// every node shows the same tasks.
struct RebalanceTaskDef {
  uint64_t id = 0;
  std::string kind;  // "reprotect" or "rebalance"
  uint64_t table_id = 0;
  std::string db, table, representation;
  uint64_t slice_id = 0;
  std::string source, target;
  std::string drop_from;  // rebalance: leaves the slice when the target is promoted
  std::string state;      // "copying", "finished", "cancelled"
  uint64_t bytes = 0;
  int64_t started_ms = 0;
  int64_t finished_ms = 0;  // 0: not finished, or cancelled at a node's removal
  std::string error;
};
// Finished and cancelled tasks kept (the oldest go first).
inline constexpr size_t kKeptFinishedTasks = 1000;

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
  // Bumped by every published change; ReplaceTable checks it.
  uint64_t version = 0;
  // Replicas per slice asked for (REPLICAS=n); 0: kDefaultReplicas.
  uint32_t replicas = 0;
  // Page compression of the table's slices on disk (table option
  // COMPRESSION=): "" for none, "zlib" or "zstd".
  std::string compression;
  // Online DDL in a cluster (src/exec/online_ddl.h). While `ddl_owner`
  // names a node, a DDL statement running there is changing the table: no
  // statement writes its rows (writers fail with the retryable 1047) and the
  // rebalancer leaves it alone. `pending_indexes` are representations that
  // DDL is building: their slices exist on the nodes placed (every node
  // creates them when it applies the change, as for any representation),
  // but no statement reads or writes them until the DDL publishes them as
  // `indexes`. Both are empty outside such a DDL.
  std::string ddl_owner;
  std::vector<RepresentationDef> pending_indexes;
  // An online index build (CREATE INDEX, ALTER TABLE ADD/DROP INDEX) lets
  // writes go on: while set (with `ddl_owner`), writers are not refused and
  // every write also writes the entries of `pending_indexes` (no UNIQUE
  // check on them; the DDL checks). False: `ddl_owner` refuses writers.
  bool ddl_allows_writes = false;

  // Index of the column named `name` (case-insensitive), or -1.
  int FindColumn(std::string_view name) const;
  // Position in `indexes` of the index named `name` (case-insensitive), or -1.
  int FindIndex(std::string_view name) const;
  // Index of the AUTO_INCREMENT column, or -1.
  int AutoIncrementColumn() const;
  // Every representation with storage slices: the primary key, the
  // indexes and the pending indexes.
  std::vector<const RepresentationDef*> StoredRepresentations() const;
};

// The storage options of a table's slices (its COMPRESSION= option):
// every slice of the table and of its indexes is created with them.
storage::SliceOptions SliceOptionsOf(const TableDef& table);

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

// What applying one command gave: its status (the same on every node) and
// a value (the first id reserved, 1 if something was created, the number of
// tables dropped, ...).
struct CommandResult {
  Status status;
  int64_t value = 0;
};

// Applies a serialized pb::Command through the cluster and returns its
// result once it is applied on this node.
using CommandSubmitter = std::function<CommandResult(const std::string& command)>;

// Told about every change of a table's definition: before == nullptr for a
// new table, after == nullptr for a dropped one. Called twice per change:
// with kPrepare before the change is written (the node creates the storage
// slices it will hold, so the catalog never names a local slice that does
// not exist), and with kDone after it is published and the catalog lock is
// released (the node drops the slices it no longer holds).
enum class TableChangePhase : uint8_t { kPrepare = 1, kDone = 2 };
using TableListener =
    std::function<void(TableChangePhase phase, const TableDef* before, const TableDef* after)>;

// Whether two definitions of a table differ only in where slices' replicas
// are (the rebalancer's changes): a statement that routed with one and
// commits under the other is retried (1047), not refused as changed (1412).
bool OnlyPlacementDiffers(const TableDef& a, const TableDef& b);

// Whether the serialized command (a pb::Command, catalog or accounts) is
// one a user issued and expects every node to know once it is acknowledged:
// DDL, users and grants. False for internal bookkeeping (id reservations,
// AUTO_INCREMENT counters, replica moves, tasks) and unreadable bytes.
bool IsUserVisibleCommand(const std::string& command);

// The replica count a table asks for (TableDef::replicas or the default).
inline uint32_t WantedReplicas(const TableDef& t) { return t.replicas ? t.replicas : kDefaultReplicas; }

class Catalog {
 public:
  // Loads the catalog kept in `meta` (empty on a new node).
  static Result<std::unique_ptr<Catalog>> Load(storage::MetaStore* meta);

  // Routes every change through `submit` from now on (shaled, with a
  // cluster). REQUIRES: before statements run.
  void SetSubmitter(CommandSubmitter submit) { submit_ = std::move(submit); }
  // REQUIRES: before statements run.
  void SetTableListener(TableListener listener) { listener_ = std::move(listener); }
  // Applies a catalog command (see catalog_command.h) at log index `index`
  // (0: not from a log). Commands of other kinds fail with InvalidArgument.
  CommandResult ApplyCommand(const std::string& command, uint64_t index);
  // The log index of the last command applied before this process loaded
  // the catalog (entries at or below it are already reflected).
  uint64_t loaded_applied_index() const { return loaded_applied_index_; }
  // Every table (all databases), for system tables and snapshots.
  std::vector<std::shared_ptr<const TableDef>> AllTables() const;
  // The catalog part of a snapshot (catalog_command.h): databases, tables,
  // next id and counters as serialized pb messages.
  void SnapshotInto(std::string* state_bytes) const;
  // Replaces every "catalog/" key of the MetaStore with the catalog of a
  // snapshot's state (plus `extra`, e.g. the accounts), records `index` as
  // applied, and reloads.
  Status InstallSnapshot(const std::string& state_bytes, uint64_t index,
                         std::vector<storage::MetaStore::Change> extra);

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

  // The rebalancer's slice-map changes (catalog.proto AddBuildingReplicaOp,
  // PromoteReplicaOp, CancelTaskOp), applied through the log like DDL.
  // `task` names the slice (table_id, slice_id), the kind, source, target,
  // drop_from and start time; the id must be fresh (NextId). The three fail
  // (InvalidArgument, nothing changed) when the map no longer allows them:
  // the slice is gone, the source no longer serves, the target already holds
  // a replica, the task is not building.
  Status AddBuildingReplica(const RebalanceTaskDef& task);
  Status PromoteReplica(uint64_t table_id, uint64_t slice_id, uint64_t task_id, uint64_t bytes, int64_t finished_ms);
  Status CancelTask(uint64_t table_id, uint64_t slice_id, uint64_t task_id, const std::string& error,
                    int64_t finished_ms);
  // Every task recorded (running first, then finished ones), by id.
  std::vector<RebalanceTaskDef> RebalanceTasks() const;

  // A fresh id for a table or slice, durable (and with a cluster, unique in
  // the cluster) before it is returned.
  Result<uint64_t> NextId();

  // Reserves `count` consecutive values of the per-table counter `counter`
  // ("row_id" for the hidden primary key; other names, e.g.
  // "auto_increment", are free for their users) and returns the first,
  // which is at least `at_least`. Durable and, with a cluster, unique in the
  // cluster (one Raft command). Values reserved are never handed out again,
  // also across restarts. ER_AUTOINC_READ_FAILED (1467) when exhausted. With
  // `min_count` > 0, fewer than `count` (but at least min_count) values are
  // reserved when the counter would pass INT64_MAX: the range ends there.
  Result<int64_t> ReserveIds(uint64_t table_id, std::string_view counter, int64_t count, int64_t at_least = 0,
                             int64_t min_count = 0);

  // Reserves `count` consecutive row ids for the hidden primary key of table
  // `table_id` and returns the first. Ids are reserved durably in batches of
  // at least kRowIdBatch, so ids handed out before a restart are never
  // handed out again (ids reserved but unused are skipped).
  Result<int64_t> AllocateRowIds(uint64_t table_id, int64_t count);

  // Id counters (hidden row ids, AUTO_INCREMENT). ReserveIds is the one
  // place ids are handed out: it hands out `count` consecutive ids of
  // `counter` of table `table_id` and returns the first, reserving durably
  // (the counter commands above: through the Raft log with a cluster) in
  // batches of at least kRowIdBatch cached per node — so with several nodes
  // ids interleave across nodes, as with InnoDB's auto_increment_offset —
  // and an id handed out
  // before a restart or crash is never handed out again (ids reserved but
  // unused are skipped, unless ReleaseUnusedIds ran at a clean shutdown).
  // A counter starts at 1. ER_AUTOINC_READ_FAILED (1467) when the ids run
  // past INT64_MAX.
  Result<int64_t> ReserveIds(uint64_t table_id, IdCounter counter, int64_t count);
  // Moves the counter so the next id handed out is at least `next` (an
  // explicit AUTO_INCREMENT value was inserted). Never moves it back.
  Status AdvanceIds(uint64_t table_id, IdCounter counter, int64_t next);
  // Sets the next id to exactly `next` (CREATE TABLE ... AUTO_INCREMENT=n,
  // ALTER TABLE ... AUTO_INCREMENT=n, TRUNCATE), durably.
  Status SetNextId(uint64_t table_id, IdCounter counter, int64_t next);
  // The next id the counter would hand out (SHOW CREATE TABLE,
  // information_schema.TABLES.AUTO_INCREMENT).
  Result<int64_t> PeekNextId(uint64_t table_id, IdCounter counter) const;
  // At a clean shutdown, after the last statement: stores each counter's
  // next id instead of its reserved limit, so a restart continues where
  // the ids stopped (as MySQL 8 persists AUTO_INCREMENT). A counter some
  // other node reserved from since is left alone.
  Status ReleaseUnusedIds();
  // From now on every change fails (Unavailable) and ReleaseUnusedIds does
  // nothing: shaled calls it before it stops the cluster node the submitter
  // talks to.
  void Detach() { detached_.store(true, std::memory_order_release); }

 private:
  explicit Catalog(storage::MetaStore* meta) : meta_(meta) {}
  struct Changed {
    std::shared_ptr<const TableDef> before, after;
  };
  CommandResult Submit(const std::string& command);
  // The apply functions. REQUIRES: mu_ held; they add listener events.
  CommandResult ApplyLocked(const std::string& command, uint64_t index, std::vector<Changed>* changed);
  Status LoadLocked();  // REQUIRES: mu_ held
  void Notify(TableChangePhase phase, const std::vector<Changed>& changed);
  std::string CounterKey(std::string_view counter, uint64_t table_id) const;

  storage::MetaStore* meta_;
  CommandSubmitter submit_;
  TableListener listener_;
  uint64_t loaded_applied_index_ = 0;
  std::mutex apply_mu_;  // serializes ApplyCommand (and the listener calls)
  mutable std::mutex mu_;
  std::map<std::string, int64_t> counters_;  // GUARDED_BY(mu_); MetaStore key -> next value
  std::map<uint64_t, RebalanceTaskDef> tasks_;  // GUARDED_BY(mu_); by id
  // The MetaStore changes that record `task` and drop the finished tasks
  // past kKeptFinishedTasks (from tasks_ too). REQUIRES: mu_ held.
  void PutTaskLocked(const RebalanceTaskDef& task, std::vector<storage::MetaStore::Change>* batch);
  mutable std::mutex id_mu_;  // the caches of reserved ids below (never held while applying)
  uint64_t id_cache_next_ = 0, id_cache_limit_ = 0;  // GUARDED_BY(id_mu_): NextId ids reserved via the cluster
  std::map<std::string, std::map<std::string, std::shared_ptr<const TableDef>>> dbs_;  // GUARDED_BY(mu_)
  uint64_t next_id_ = 1;  // GUARDED_BY(mu_)
  struct RowIdRange {
    int64_t next = 0;   // next id to hand out
    int64_t limit = 0;  // first id not reserved
    uint64_t generation = 0;
  };
  // Both counters' cached ranges, by (table id, counter). A range is only
  // used while `generation` equals counter_generation_ (a SetNextId anywhere
  // in the cluster bumps it, so every node drops its cached ranges).
  std::map<std::pair<uint64_t, IdCounter>, RowIdRange> row_ids_;  // GUARDED_BY(id_mu_)
  // The cached range of a counter, dropped when stale. REQUIRES: id_mu_ held.
  RowIdRange& IdRangeLocked(uint64_t table_id, IdCounter counter);
  // The counter's stored next value (1 if never reserved).
  int64_t StoredCounter(uint64_t table_id, IdCounter counter) const;
  std::atomic<uint64_t> counter_generation_{0};
  // Set by Detach(): Submit refuses (shutdown, cluster stopped).
  std::atomic<bool> detached_{false};
};

}  // namespace shale::catalog

// MetaStore: the node-local durable key/value store for metadata — the node's
// identity and the catalog now, the Raft log and snapshots later. Backed by
// RocksDB (ARCHITECTURE.md, Cluster).
//
// Invariants:
//  1. Every write is synced (WAL fsync) before it returns OK, except
//     DeleteUnsynced's: that one is in RocksDB's WAL file when it returns
//     (written to the operating system, so it survives kill -9 of the
//     process, not a power loss) and is synced by the next synced write or
//     SyncUnsynced, whichever comes first (the WAL is one ordered file).
//  2. A batch is atomic: after a crash all or none of it is present.
//
// Thread-safety: all methods may be called concurrently.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shale/status.h"

namespace shale::storage {

class MetaStore {
 public:
  // One change of a batch: a value to put, or std::nullopt to delete.
  using Change = std::pair<std::string, std::optional<std::string>>;

  virtual ~MetaStore() = default;
  // Opens (creating if needed) the RocksDB database at `path`.
  static Result<std::unique_ptr<MetaStore>> Open(const std::string& path);

  virtual Status Put(std::string_view key, std::string_view value) = 0;
  virtual Status Delete(std::string_view key) = 0;
  // Delete without the fsync (invariant 1): for a record whose return after
  // a power loss is harmless until SyncUnsynced has run.
  virtual Status DeleteUnsynced(std::string_view key) = 0;
  // Makes every write made so far durable: one WAL fsync when there was an
  // unsynced write since the last sync, else nothing.
  virtual Status SyncUnsynced() = 0;
  // Status::NotFound when absent.
  virtual Status Get(std::string_view key, std::string* value) const = 0;
  virtual Status Write(const std::vector<Change>& batch) = 0;
  // Write without the fsync: atomic, in RocksDB's WAL file when it returns
  // (it survives kill -9 of the process); after a power loss all of it or
  // none may be back, until SyncUnsynced has run. For batches whose loss is
  // harmless.
  virtual Status WriteUnsynced(const std::vector<Change>& batch) = 0;
  // Calls fn(key, value) for every key starting with `prefix`, in key order,
  // until fn returns false.
  virtual Status Scan(std::string_view prefix,
                      const std::function<bool(std::string_view, std::string_view)>& fn) const = 0;
};

}  // namespace shale::storage

// Engine: everything one node runs statements against — the catalog, the
// node's slice store, and node-wide settings. One per shaled process.
//
// Thread-safety: all methods may be called concurrently.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "shale/status.h"
#include "src/catalog/catalog.h"
#include "src/common/value.h"
#include "storage/meta_store.h"
#include "storage/slice.h"

namespace shale::exec {

struct EngineOptions {
  // Directory holding this node's data: meta/ (RocksDB) and slices/.
  // Default: none; required.
  std::string data_dir;
  // Slices a new table's primary-key representation is cut into when the
  // statement does not say (CREATE TABLE ... SLICES=n). Default: 4.
  uint32_t default_slices = 4;
  // Name of this node, shown in system tables and logs. Default: "node1".
  std::string node_name = "node1";
  // The slice store: buffer pool, WAL mode, checkpoints (storage/slice.h).
  storage::SliceStoreOptions storage;
};

class Engine {
 public:
  // Opens (creating if needed) the node's data directory and recovers it.
  static Result<std::unique_ptr<Engine>> Open(const EngineOptions& options);
  ~Engine();

  const EngineOptions& options() const { return options_; }
  catalog::Catalog* catalog() { return catalog_.get(); }
  storage::SliceStore* slices() { return slices_.get(); }
  storage::MetaStore* meta() { return meta_.get(); }
  // Global system variables; sessions copy them at connect.
  const std::map<std::string, Value>& global_variables() const { return globals_; }
  // Serializes writers of one table between their duplicate-key check and
  // their write (until row locks arrive with the transaction layer).
  std::mutex& TableWriteMutex(uint64_t table_id);

 private:
  explicit Engine(EngineOptions options);

  EngineOptions options_;
  std::unique_ptr<storage::MetaStore> meta_;
  std::unique_ptr<storage::SliceStore> slices_;
  std::unique_ptr<catalog::Catalog> catalog_;
  std::map<std::string, Value> globals_;
  std::mutex table_mutexes_mu_;
  std::map<uint64_t, std::unique_ptr<std::mutex>> table_mutexes_;  // GUARDED_BY(table_mutexes_mu_)
};

}  // namespace shale::exec

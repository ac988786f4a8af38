// MetaStoreRaftStorage: a node's durable Raft state (term, vote, log,
// snapshot) in its node-local RocksDB MetaStore. Every call is one synced
// RocksDB batch (MetaStore invariant 1), so a reply that depends on it is
// sent only after it is on disk.
//
// Keys (values are protobuf messages from raft.proto; DO NOT CHANGE):
//   raft/hard_state          HardStatePb    current term and vote
//   raft/snapshot            SnapshotPb     latest snapshot (with its config)
//   raft/log/<20 digits>     LogEntryPb     entry by zero-padded index
//
// Thread-safety: as the MetaStore (any); RaftNode calls it from one thread.
#pragma once

#include <string>

#include "src/cluster/raft.h"

namespace shale::storage {
class MetaStore;
}

namespace shale::cluster::raft {

inline constexpr std::string_view kHardStateKey = "raft/hard_state";
inline constexpr std::string_view kSnapshotKey = "raft/snapshot";
inline constexpr std::string_view kLogPrefix = "raft/log/";
std::string LogKey(uint64_t index);

class MetaStoreRaftStorage final : public RaftStorage {
 public:
  // REQUIRES: store outlives this object.
  explicit MetaStoreRaftStorage(storage::MetaStore* store) : store_(store) {}

  Status Load(HardState* hard_state, Snapshot* snapshot, std::vector<LogEntry>* log) override;
  Status SaveHardState(const HardState& hard_state) override;
  Status WriteLog(uint64_t from_index, uint64_t old_last_index, const std::vector<LogEntry>& entries) override;
  Status SaveSnapshot(const Snapshot& snapshot, uint64_t drop_from, uint64_t drop_to) override;

 private:
  storage::MetaStore* store_;
};

}  // namespace shale::cluster::raft

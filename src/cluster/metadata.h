// Metadata: the state the Raft log replicates — the member list, the
// metadata epoch, the catalog and accounts (through hooks into
// src/catalog), and the cluster timestamp high-water mark
// (docs/cluster.md, "What is replicated").
//
// Log entries of type kNormal hold a MetadataCommandPb (raft.proto): a
// catalog command, applied through MetadataHooks::apply_catalog, or a new
// timestamp high-water mark. A config entry that removes a member also
// removes that node's replicas from every slice (a RemoveNodeReplicas
// catalog command applied at the same index), so the next replica of each
// slice ranks.
//
// Invariants:
//  1. `epoch` counts the membership changes applied (the bootstrap config is
//     epoch 1) and never decreases.
//  2. `members` is the voter set of the last applied config entry.
//  3. timestamp_high_water never decreases; no leader hands out a commit
//     timestamp above the applied mark.
//  4. The result of each applied entry is kept (with its term) for the last
//     kKeptResults entries, so a proposer learns what its command did.
//
// Thread-safety: none; ClusterNode calls it under its mutex.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "shale/status.h"
#include "src/cluster/raft.h"

namespace shale::cluster {

// What applying one entry gave (src/catalog's CommandResult, as cluster
// sees it).
struct ApplyResult {
  Status status;
  int64_t value = 0;
};

// How the metadata reaches the catalog (set by shaled; empty in tests that
// run membership only).
struct MetadataHooks {
  // Applies a serialized catalog command at log index `index`.
  std::function<ApplyResult(const std::string& command, uint64_t index)> apply_catalog;
  // The catalog and accounts as bytes, for a snapshot.
  std::function<std::string()> snapshot_catalog;
  // Installs a snapshot's catalog bytes as of log index `index`.
  std::function<void(const std::string& state, uint64_t index)> restore_catalog;
};

class Metadata final : public raft::StateMachine {
 public:
  static constexpr size_t kKeptResults = 4096;

  void SetHooks(MetadataHooks hooks) { hooks_ = std::move(hooks); }

  void Apply(const raft::LogEntry& entry) override;
  std::string TakeSnapshot() override;
  void Restore(const raft::Snapshot& snapshot) override;

  uint64_t epoch() const { return epoch_; }
  const raft::Config& members() const { return members_; }
  uint64_t applied_index() const { return applied_index_; }
  uint64_t timestamp_high_water() const { return timestamp_high_water_; }
  // The result of the entry applied at `index` and that entry's term, if
  // still kept.
  const std::pair<uint64_t, ApplyResult>* ResultAt(uint64_t index) const;

 private:
  void Keep(uint64_t index, uint64_t term, ApplyResult result);

  MetadataHooks hooks_;
  uint64_t epoch_ = 0;
  raft::Config members_;
  uint64_t applied_index_ = 0;
  uint64_t timestamp_high_water_ = 0;
  std::map<uint64_t, std::pair<uint64_t, ApplyResult>> results_;  // index -> (term, result)
};

}  // namespace shale::cluster

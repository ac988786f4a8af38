// Metadata: the state the Raft log replicates — today the member list and
// the metadata epoch; the catalog and the slice map come next
// (docs/cluster.md).
//
// Invariants:
//  1. `epoch` counts the membership changes applied (the bootstrap config is
//     epoch 1) and never decreases.
//  2. `members` is the voter set of the last applied config entry.
//
// Thread-safety: none; ClusterNode calls it under its mutex.
#pragma once

#include <cstdint>
#include <string>

#include "src/cluster/raft.h"

namespace shale::cluster {

class Metadata final : public raft::StateMachine {
 public:
  void Apply(const raft::LogEntry& entry) override;
  std::string TakeSnapshot() override;
  void Restore(const raft::Snapshot& snapshot) override;

  uint64_t epoch() const { return epoch_; }
  const raft::Config& members() const { return members_; }

 private:
  uint64_t epoch_ = 0;
  raft::Config members_;
};

}  // namespace shale::cluster

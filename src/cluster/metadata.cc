#include "src/cluster/metadata.h"

#include "src/cluster/raft_codec.h"
#include "src/common/log.h"

namespace shale::cluster {

void Metadata::Apply(const raft::LogEntry& entry) {
  if (entry.type != raft::EntryType::kConfig) return;
  members_ = entry.config;
  ++epoch_;
  log::Info("cluster: metadata epoch {}: {} member(s)", epoch_, members_.voters.size());
}

std::string Metadata::TakeSnapshot() {
  MetadataPb pb;
  pb.set_epoch(epoch_);
  raft::ToProto(members_, pb.mutable_members());
  return pb.SerializeAsString();
}

void Metadata::Restore(const raft::Snapshot& snapshot) {
  MetadataPb pb;
  if (!pb.ParseFromString(snapshot.data)) {
    // A snapshot is written by TakeSnapshot; fall back to its config.
    log::Error("cluster: metadata snapshot at {} does not parse; using its config", snapshot.last_index);
    members_ = snapshot.config;
    return;
  }
  epoch_ = pb.epoch();
  members_ = raft::FromProto(pb.members());
}

}  // namespace shale::cluster

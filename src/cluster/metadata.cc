#include "src/cluster/metadata.h"

#include "src/catalog/catalog.pb.h"
#include "src/cluster/raft_codec.h"
#include "src/common/log.h"

namespace shale::cluster {

void Metadata::Keep(uint64_t index, uint64_t term, ApplyResult result) {
  results_[index] = {term, std::move(result)};
  while (results_.size() > kKeptResults) results_.erase(results_.begin());
}

const std::pair<uint64_t, ApplyResult>* Metadata::ResultAt(uint64_t index) const {
  auto it = results_.find(index);
  return it == results_.end() ? nullptr : &it->second;
}

void Metadata::Apply(const raft::LogEntry& entry) {
  applied_index_ = entry.index;
  if (entry.type == raft::EntryType::kConfig) {
    const raft::Config before = members_;
    members_ = entry.config;
    ++epoch_;
    log::Info("cluster: metadata epoch {}: {} member(s)", epoch_, members_.voters.size());
    ApplyResult result;
    for (const raft::Member& m : before.voters) {
      if (members_.Contains(m.id) || !hooks_.apply_catalog) continue;
      // A member left: its replicas leave the slice map at this same index.
      catalog::pb::Command cmd;
      cmd.mutable_remove_node_replicas()->set_node(m.name);
      result = hooks_.apply_catalog(cmd.SerializeAsString(), entry.index);
      if (result.status.ok() && result.value > 0) {
        log::Warn("cluster: node {} ({}) left; {} slice replica(s) dropped from the slice map", m.id, m.name,
                  result.value);
      }
    }
    Keep(entry.index, entry.term, std::move(result));
    return;
  }
  if (entry.type != raft::EntryType::kNormal) {
    Keep(entry.index, entry.term, ApplyResult{});
    return;
  }
  MetadataCommandPb cmd;
  if (!cmd.ParseFromString(entry.data)) {
    log::Error("cluster: metadata entry {} does not parse; skipped", entry.index);
    Keep(entry.index, entry.term, ApplyResult{Status::Corruption("unreadable metadata command"), 0});
    return;
  }
  ApplyResult result;
  switch (cmd.op_case()) {
    case MetadataCommandPb::kCatalog:
      if (hooks_.apply_catalog) {
        result = hooks_.apply_catalog(cmd.catalog(), entry.index);
      } else {
        result.status = Status::Unavailable("this node applies no catalog commands");
      }
      break;
    case MetadataCommandPb::kTimestampHighWater:
      timestamp_high_water_ = std::max(timestamp_high_water_, cmd.timestamp_high_water());
      result.value = static_cast<int64_t>(timestamp_high_water_);
      break;
    default: result.status = Status::InvalidArgument("unknown metadata command"); break;
  }
  Keep(entry.index, entry.term, std::move(result));
}

std::string Metadata::TakeSnapshot() {
  MetadataPb pb;
  pb.set_epoch(epoch_);
  raft::ToProto(members_, pb.mutable_members());
  pb.set_timestamp_high_water(timestamp_high_water_);
  if (hooks_.snapshot_catalog) pb.set_catalog(hooks_.snapshot_catalog());
  return pb.SerializeAsString();
}

void Metadata::Restore(const raft::Snapshot& snapshot) {
  applied_index_ = snapshot.last_index;
  MetadataPb pb;
  if (!pb.ParseFromString(snapshot.data)) {
    // A snapshot is written by TakeSnapshot; fall back to its config.
    log::Error("cluster: metadata snapshot at {} does not parse; using its config", snapshot.last_index);
    members_ = snapshot.config;
    return;
  }
  epoch_ = pb.epoch();
  members_ = raft::FromProto(pb.members());
  timestamp_high_water_ = std::max(timestamp_high_water_, pb.timestamp_high_water());
  if (hooks_.restore_catalog && !pb.catalog().empty()) hooks_.restore_catalog(pb.catalog(), snapshot.last_index);
}

}  // namespace shale::cluster

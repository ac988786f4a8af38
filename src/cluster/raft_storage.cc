#include "src/cluster/raft_storage.h"

#include <fmt/format.h>

#include "src/cluster/raft_codec.h"
#include "storage/meta_store.h"

namespace shale::cluster::raft {

std::string LogKey(uint64_t index) { return fmt::format("{}{:020}", kLogPrefix, index); }

Status MetaStoreRaftStorage::Load(HardState* hard_state, Snapshot* snapshot, std::vector<LogEntry>* log) {
  *hard_state = HardState{};
  *snapshot = Snapshot{};
  log->clear();
  std::string value;
  Status st = store_->Get(kHardStateKey, &value);
  if (st.ok()) {
    HardStatePb pb;
    if (!pb.ParseFromString(value)) return Status::Corruption("raft hard state does not parse");
    hard_state->term = pb.term();
    hard_state->vote = pb.vote();
  } else if (!st.IsNotFound()) {
    return st;
  }
  st = store_->Get(kSnapshotKey, &value);
  if (st.ok()) {
    SnapshotPb pb;
    if (!pb.ParseFromString(value)) return Status::Corruption("raft snapshot does not parse");
    *snapshot = FromProto(pb);
  } else if (!st.IsNotFound()) {
    return st;
  }
  bool bad = false;
  st = store_->Scan(kLogPrefix, [&](std::string_view key, std::string_view v) {
    LogEntryPb pb;
    if (!pb.ParseFromArray(v.data(), static_cast<int>(v.size()))) {
      bad = true;
      return false;
    }
    LogEntry e = FromProto(pb);
    if (key != LogKey(e.index)) {
      bad = true;
      return false;
    }
    if (e.index > snapshot->last_index) log->push_back(std::move(e));
    return true;
  });
  if (!st.ok()) return st;
  if (bad) return Status::Corruption("a raft log entry does not parse or sits under the wrong key");
  return Status::OK();
}

Status MetaStoreRaftStorage::SaveHardState(const HardState& hard_state) {
  HardStatePb pb;
  pb.set_term(hard_state.term);
  pb.set_vote(hard_state.vote);
  return store_->Put(kHardStateKey, pb.SerializeAsString());
}

Status MetaStoreRaftStorage::WriteLog(uint64_t from_index, uint64_t old_last_index,
                                      const std::vector<LogEntry>& entries) {
  std::vector<storage::MetaStore::Change> batch;
  for (uint64_t i = from_index; i <= old_last_index; ++i) batch.emplace_back(LogKey(i), std::nullopt);
  for (const LogEntry& e : entries) {
    LogEntryPb pb;
    ToProto(e, &pb);
    batch.emplace_back(LogKey(e.index), pb.SerializeAsString());
  }
  return store_->Write(batch);
}

Status MetaStoreRaftStorage::SaveSnapshot(const Snapshot& snapshot, uint64_t drop_from, uint64_t drop_to) {
  std::vector<storage::MetaStore::Change> batch;
  SnapshotPb pb;
  ToProto(snapshot, &pb);
  batch.emplace_back(std::string(kSnapshotKey), pb.SerializeAsString());
  for (uint64_t i = drop_from; drop_from != 0 && i <= drop_to; ++i) batch.emplace_back(LogKey(i), std::nullopt);
  return store_->Write(batch);
}

}  // namespace shale::cluster::raft

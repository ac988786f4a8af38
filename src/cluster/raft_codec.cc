#include "src/cluster/raft_codec.h"

namespace shale::cluster::raft {

void ToProto(const Member& in, MemberPb* out) {
  out->set_id(in.id);
  out->set_name(in.name);
  out->set_address(in.address);
  out->set_sql_address(in.sql_address);
}

Member FromProto(const MemberPb& in) { return Member{in.id(), in.name(), in.address(), in.sql_address()}; }

void ToProto(const Config& in, ConfigPb* out) {
  for (const Member& m : in.voters) ToProto(m, out->add_voters());
}

Config FromProto(const ConfigPb& in) {
  Config c;
  for (const MemberPb& m : in.voters()) c.voters.push_back(FromProto(m));
  return c;
}

void ToProto(const LogEntry& in, LogEntryPb* out) {
  out->set_index(in.index);
  out->set_term(in.term);
  out->set_type(static_cast<uint32_t>(in.type));
  out->set_data(in.data);
  if (in.type == EntryType::kConfig) ToProto(in.config, out->mutable_config());
}

LogEntry FromProto(const LogEntryPb& in) {
  LogEntry e;
  e.index = in.index();
  e.term = in.term();
  e.type = static_cast<EntryType>(in.type());
  e.data = in.data();
  if (e.type == EntryType::kConfig) e.config = FromProto(in.config());
  return e;
}

void ToProto(const Snapshot& in, SnapshotPb* out) {
  out->set_last_index(in.last_index);
  out->set_last_term(in.last_term);
  ToProto(in.config, out->mutable_config());
  out->set_data(in.data);
}

Snapshot FromProto(const SnapshotPb& in) {
  Snapshot s;
  s.last_index = in.last_index();
  s.last_term = in.last_term();
  s.config = FromProto(in.config());
  s.data = in.data();
  return s;
}

void ToProto(const Message& in, RaftMessagePb* out) {
  out->set_type(static_cast<uint32_t>(in.type));
  out->set_from(in.from);
  out->set_to(in.to);
  out->set_term(in.term);
  out->set_pre_vote(in.pre_vote);
  out->set_last_log_index(in.last_log_index);
  out->set_last_log_term(in.last_log_term);
  out->set_granted(in.granted);
  out->set_prev_index(in.prev_index);
  out->set_prev_term(in.prev_term);
  out->set_commit(in.commit);
  for (const LogEntry& e : in.entries) ToProto(e, out->add_entries());
  out->set_success(in.success);
  out->set_match_index(in.match_index);
  out->set_conflict_index(in.conflict_index);
  out->set_conflict_term(in.conflict_term);
  if (in.type == MessageType::kSnapshot) ToProto(in.snapshot, out->mutable_snapshot());
}

bool FromProto(const RaftMessagePb& in, Message* out) {
  if (in.type() < 1 || in.type() > 6) return false;
  out->type = static_cast<MessageType>(in.type());
  out->from = in.from();
  out->to = in.to();
  out->term = in.term();
  out->pre_vote = in.pre_vote();
  out->last_log_index = in.last_log_index();
  out->last_log_term = in.last_log_term();
  out->granted = in.granted();
  out->prev_index = in.prev_index();
  out->prev_term = in.prev_term();
  out->commit = in.commit();
  out->entries.clear();
  for (const LogEntryPb& e : in.entries()) out->entries.push_back(FromProto(e));
  out->success = in.success();
  out->match_index = in.match_index();
  out->conflict_index = in.conflict_index();
  out->conflict_term = in.conflict_term();
  if (out->type == MessageType::kSnapshot) out->snapshot = FromProto(in.snapshot());
  return true;
}

}  // namespace shale::cluster::raft

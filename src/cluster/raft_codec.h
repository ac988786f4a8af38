// Conversions between the Raft structs (raft.h) and their protobuf form
// (raft.proto), used on the wire (cluster_node.cc) and on disk
// (raft_storage.cc).
//
// Thread-safety: pure functions.
#pragma once

#include "src/cluster/raft.h"
#include "src/cluster/raft.pb.h"

namespace shale::cluster::raft {

void ToProto(const Member& in, MemberPb* out);
Member FromProto(const MemberPb& in);
void ToProto(const Config& in, ConfigPb* out);
Config FromProto(const ConfigPb& in);
void ToProto(const LogEntry& in, LogEntryPb* out);
LogEntry FromProto(const LogEntryPb& in);
void ToProto(const Snapshot& in, SnapshotPb* out);
Snapshot FromProto(const SnapshotPb& in);
void ToProto(const Message& in, RaftMessagePb* out);
// False if the type is unknown.
bool FromProto(const RaftMessagePb& in, Message* out);

}  // namespace shale::cluster::raft

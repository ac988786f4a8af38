// RaftNode: one member of the Raft group that keeps the cluster's membership
// and metadata (ARCHITECTURE.md, Cluster; docs/cluster.md).
//
// The node is a deterministic state machine. Everything it depends on is
// injected: messages leave through a send callback, time arrives through
// Tick(now_ms), durable state goes to a RaftStorage, committed entries go to
// a StateMachine, and the election timeouts come from a seeded generator. No
// threads, no sockets: the unit tests drive many nodes over a simulated
// network (src/cluster/raft_test.cc) and src/cluster/cluster_node.cc drives
// one node over gRPC.
//
// Implemented (Ongaro's thesis, "Consensus: Bridging Theory and Practice"):
//   - leader election with randomized timeouts in [T, 2T), with pre-vote
//     (a would-be candidate first asks whether it could win, without bumping
//     any term) and vote leases (a node that heard from a leader within T
//     ignores vote requests), so a node rejoining after a partition does not
//     disrupt a working leader;
//   - log replication with the consistency check and fast backtracking (a
//     follower's rejection names the conflicting term and its first index);
//   - commit only of entries of the leader's own term by counting (§3.6.2);
//     a no-op entry is appended at the start of every term;
//   - snapshots with log compaction, and InstallSnapshot for followers that
//     are behind the compacted prefix;
//   - single-server membership changes: a config entry adds or removes one
//     voter and takes effect as soon as it is appended; a leader starts at
//     most one change at a time and only after committing an entry of its
//     term; a leader that is not in the new config steps down once the
//     change commits;
//   - check-quorum: a leader that has not heard from a majority within an
//     election timeout steps down, so a cut-off leader stops serving.
//
// Invariants (checked by raft_test.cc on every simulated run):
//  1. Election safety: at most one leader per term.
//  2. Log matching: two logs with an entry of the same index and term are
//     identical up to that index.
//  3. Leader completeness: a committed entry is in the log of every later
//     leader.
//  4. State-machine safety: no two nodes apply different entries at one index.
//  5. Term, vote and every log entry are durable (RaftStorage returned OK)
//     before any message that depends on them leaves the node.
//
// Thread-safety: none. The owner serializes every call (ClusterNode holds a
// mutex); callbacks run inside the call that triggered them.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "shale/status.h"

namespace shale::cluster::raft {

using NodeId = std::string;

// One voter of the group. `address` is its cluster (gRPC) address and
// `sql_address` its MySQL address; both travel with the config so every
// member can reach every other.
struct Member {
  NodeId id;
  std::string name;
  std::string address;
  std::string sql_address;
  bool operator==(const Member&) const = default;
};

struct Config {
  std::vector<Member> voters;
  bool Contains(const NodeId& id) const;
  const Member* Find(const NodeId& id) const;
  bool operator==(const Config&) const = default;
};

// On-disk and on-wire values: DO NOT CHANGE.
enum class EntryType : uint8_t {
  kNoop = 1,    // appended by every new leader; no state-machine effect
  kNormal = 2,  // opaque state-machine command
  kConfig = 3,  // `config` is the full voter set from this entry on
};

struct LogEntry {
  uint64_t index = 0;
  uint64_t term = 0;
  EntryType type = EntryType::kNormal;
  std::string data;  // kNormal
  Config config;     // kConfig
  bool operator==(const LogEntry&) const = default;
};

struct Snapshot {
  uint64_t last_index = 0;  // last entry the snapshot covers; 0 = none
  uint64_t last_term = 0;
  Config config;            // the config as of last_index
  std::string data;         // StateMachine::TakeSnapshot()
};

struct HardState {
  uint64_t term = 0;
  NodeId vote;  // empty: no vote in `term`
};

// On-wire values: DO NOT CHANGE.
enum class MessageType : uint8_t {
  kVote = 1,
  kVoteReply = 2,
  kAppend = 3,
  kAppendReply = 4,
  kSnapshot = 5,
  kSnapshotReply = 6,
};

// Every message Raft sends. Which fields matter depends on `type`.
struct Message {
  MessageType type = MessageType::kAppend;
  NodeId from;
  NodeId to;
  uint64_t term = 0;
  // kVote / kVoteReply
  bool pre_vote = false;
  uint64_t last_log_index = 0;
  uint64_t last_log_term = 0;
  bool granted = false;
  // kAppend
  uint64_t prev_index = 0;
  uint64_t prev_term = 0;
  uint64_t commit = 0;
  std::vector<LogEntry> entries;
  // kAppendReply / kSnapshotReply
  bool success = false;
  uint64_t match_index = 0;     // success: last index known to match
  uint64_t conflict_index = 0;  // failure: where the leader should retry
  uint64_t conflict_term = 0;   // failure: term at prev_index, 0 if none
  // kSnapshot
  Snapshot snapshot;
};

// Durable state of one node. Every call must be durable (fsynced) before it
// returns OK. Errors are fatal for the node's Raft role (it stops answering).
class RaftStorage {
 public:
  virtual ~RaftStorage() = default;
  // Everything stored; empty values on a fresh node. `log` is in index order
  // and starts right after snapshot->last_index.
  virtual Status Load(HardState* hard_state, Snapshot* snapshot, std::vector<LogEntry>* log) = 0;
  virtual Status SaveHardState(const HardState& hard_state) = 0;
  // Deletes entries with index in [from_index, old_last_index], then stores
  // `entries` (whose first index, if any, is from_index).
  virtual Status WriteLog(uint64_t from_index, uint64_t old_last_index,
                          const std::vector<LogEntry>& entries) = 0;
  // Stores `snapshot` (replacing the previous one) and deletes the entries
  // with index in [drop_from, drop_to].
  virtual Status SaveSnapshot(const Snapshot& snapshot, uint64_t drop_from, uint64_t drop_to) = 0;
};

// In-memory storage. It outlives a RaftNode in tests, so destroying the node
// and building a new one on the same storage is a crash and restart.
class MemoryRaftStorage final : public RaftStorage {
 public:
  Status Load(HardState* hard_state, Snapshot* snapshot, std::vector<LogEntry>* log) override;
  Status SaveHardState(const HardState& hard_state) override;
  Status WriteLog(uint64_t from_index, uint64_t old_last_index, const std::vector<LogEntry>& entries) override;
  Status SaveSnapshot(const Snapshot& snapshot, uint64_t drop_from, uint64_t drop_to) override;

 private:
  HardState hard_state_;
  Snapshot snapshot_;
  std::map<uint64_t, LogEntry> log_;
};

// What the replicated log drives. Apply sees every committed entry exactly
// once per process life, in index order, including kNoop and kConfig ones.
class StateMachine {
 public:
  virtual ~StateMachine() = default;
  virtual void Apply(const LogEntry& entry) = 0;
  // The state after the last applied entry.
  virtual std::string TakeSnapshot() = 0;
  // Replaces the state with a snapshot's (from TakeSnapshot on any node).
  virtual void Restore(const Snapshot& snapshot) = 0;
};

struct RaftOptions {
  NodeId id;  // required
  // Followers wait a random time in [T, 2T) without hearing from a leader
  // before they campaign; a leader steps down after T without hearing from a
  // majority. Default: 1000 ms.
  uint64_t election_timeout_ms = 1000;
  // A leader sends AppendEntries (heartbeat) this often. Default: 100 ms.
  uint64_t heartbeat_interval_ms = 100;
  // Compact the log into a snapshot once this many entries are applied past
  // the last snapshot. Default: 1000.
  uint64_t snapshot_threshold = 1000;
  // Most entries in one AppendEntries. Default: 64.
  uint64_t max_entries_per_append = 64;
  // Pre-vote phase before a real election. Default: on.
  bool pre_vote = true;
  // Seed for the randomized election timeouts. Default: 1.
  uint64_t seed = 1;
};

enum class Role : uint8_t { kFollower = 1, kPreCandidate = 2, kCandidate = 3, kLeader = 4 };
const char* RoleName(Role role);

class RaftNode {
 public:
  using SendFn = std::function<void(Message)>;

  // REQUIRES: storage, state_machine outlive the node; send is callable.
  RaftNode(RaftOptions options, RaftStorage* storage, StateMachine* state_machine, SendFn send);

  // Loads durable state, restores the state machine from the snapshot, and
  // starts as a follower at time `now_ms`.
  Status Open(uint64_t now_ms);
  // On a node with no durable state at all: stores `config` as entry 1 (term
  // 1) so the node can elect itself. Error if the node already has state.
  Status Bootstrap(const Config& config);
  // True if the node has no log, snapshot or term (never bootstrapped or joined).
  bool IsEmpty() const;

  // Advances the clock; campaigns, sends heartbeats, checks quorum.
  void Tick(uint64_t now_ms);
  // Handles a message from a peer.
  void Step(const Message& message);

  // Leader only: appends a command; returns its index. Unavailable if not
  // the leader (naming the leader when known).
  Result<uint64_t> Propose(std::string data);
  // Leader only: appends a config entry adding `member` or, with remove,
  // removing the member with member.id. Unavailable if not the leader;
  // InvalidArgument if a change is already in progress, the leader has not
  // yet committed an entry of its term, the member is already in (add) or
  // not in (remove) the config. Returns the entry's index.
  Result<uint64_t> ProposeConfigChange(const Member& member, bool remove);

  // Whether this node can currently vouch for the cluster's state: a leader
  // that heard from a majority of voters (itself included) within the
  // election timeout, or a follower that heard from a leader within it.
  bool HasQuorum() const;

  const NodeId& id() const { return options_.id; }
  Role role() const { return role_; }
  uint64_t term() const { return term_; }
  const NodeId& leader() const { return leader_; }
  uint64_t commit_index() const { return commit_; }
  uint64_t applied_index() const { return applied_; }
  uint64_t last_index() const;
  uint64_t snapshot_index() const { return snapshot_.last_index; }
  // The config in effect (the latest config entry in the log, committed or not).
  const Config& config() const { return config_; }
  // Leader: the last time (ms) `peer` answered; 0 if never this term.
  // Follower: for the leader, the last time it was heard from.
  uint64_t LastContact(const NodeId& peer) const;
  // The stored entry at `index`, or nullptr if compacted away or absent.
  const LogEntry* EntryAt(uint64_t index) const;
  uint64_t TermAt(uint64_t index) const;  // 0 if unknown

  // Takes a snapshot at the applied index now (tests; compaction otherwise
  // runs by itself past snapshot_threshold).
  Status TEST_Compact();

 private:
  struct Progress {
    uint64_t next = 1;
    uint64_t match = 0;
    uint64_t last_ack_ms = 0;
  };

  void BecomeFollower(uint64_t term, const NodeId& leader);
  void BecomePreCandidate();
  void BecomeCandidate();
  void BecomeLeader();
  void Campaign(bool pre_vote);
  void ResetElectionTimer();
  bool InLease() const;  // heard from a leader within the election timeout

  void HandleVote(const Message& m);
  void HandleVoteReply(const Message& m);
  void HandleAppend(const Message& m);
  void HandleAppendReply(const Message& m);
  void HandleSnapshot(const Message& m);
  void HandleSnapshotReply(const Message& m);

  void SendAppend(const NodeId& peer);
  void BroadcastAppend();
  void MaybeAdvanceCommit();
  void ApplyCommitted();
  void MaybeCompact();

  // Appends to the local log (durably) after truncating from entries[0].index.
  bool AppendLocal(const std::vector<LogEntry>& entries);
  // Recomputes config_ from the log and snapshot.
  void RecomputeConfig();
  bool IsVoter(const NodeId& id) const { return config_.Contains(id); }
  size_t Majority() const { return config_.voters.size() / 2 + 1; }
  uint64_t LastTerm() const;
  bool LogUpToDate(uint64_t last_index, uint64_t last_term) const;
  void SaveHardState();
  void Send(Message m);
  // A storage failure: the node stops taking part (it can no longer keep
  // its promises) until it is restarted.
  void Fail(const Status& st);

  RaftOptions options_;
  RaftStorage* storage_;
  StateMachine* sm_;
  SendFn send_;
  std::mt19937_64 rng_;

  bool failed_ = false;
  uint64_t now_ = 0;
  Role role_ = Role::kFollower;
  uint64_t term_ = 0;
  NodeId vote_;
  NodeId leader_;
  uint64_t leader_contact_ms_ = 0;  // last message from the current leader
  bool heard_leader_ = false;
  uint64_t election_deadline_ = 0;
  uint64_t last_heartbeat_ms_ = 0;
  uint64_t quorum_check_ms_ = 0;  // leader: start of the current check window
  uint64_t term_start_index_ = 0;  // leader: index of its no-op

  Snapshot snapshot_;
  std::vector<LogEntry> log_;  // log_[i].index == snapshot_.last_index + 1 + i
  uint64_t commit_ = 0;
  uint64_t applied_ = 0;
  Config config_;
  uint64_t config_index_ = 0;  // index of the entry config_ came from (0: snapshot)

  std::map<NodeId, bool> votes_;  // current (pre-)election: voter -> granted
  std::map<NodeId, Progress> progress_;  // leader: per voter other than self
};

}  // namespace shale::cluster::raft

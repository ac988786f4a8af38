#include "src/cluster/raft.h"

#include <algorithm>

#include <fmt/format.h>

#include "src/common/log.h"

namespace shale::cluster::raft {

bool Config::Contains(const NodeId& id) const { return Find(id) != nullptr; }

const Member* Config::Find(const NodeId& id) const {
  for (const Member& m : voters) {
    if (m.id == id) return &m;
  }
  return nullptr;
}

const char* RoleName(Role role) {
  switch (role) {
    case Role::kFollower: return "follower";
    case Role::kPreCandidate: return "pre-candidate";
    case Role::kCandidate: return "candidate";
    case Role::kLeader: return "leader";
  }
  return "unknown";
}

// --- MemoryRaftStorage --------------------------------------------------

Status MemoryRaftStorage::Load(HardState* hard_state, Snapshot* snapshot, std::vector<LogEntry>* log) {
  *hard_state = hard_state_;
  *snapshot = snapshot_;
  log->clear();
  for (const auto& [index, entry] : log_) log->push_back(entry);
  return Status::OK();
}

Status MemoryRaftStorage::SaveHardState(const HardState& hard_state) {
  hard_state_ = hard_state;
  return Status::OK();
}

Status MemoryRaftStorage::WriteLog(uint64_t from_index, uint64_t old_last_index,
                                   const std::vector<LogEntry>& entries) {
  for (uint64_t i = from_index; i <= old_last_index; ++i) log_.erase(i);
  for (const LogEntry& e : entries) log_[e.index] = e;
  return Status::OK();
}

Status MemoryRaftStorage::SaveSnapshot(const Snapshot& snapshot, uint64_t drop_from, uint64_t drop_to) {
  snapshot_ = snapshot;
  for (uint64_t i = drop_from; i <= drop_to && drop_from != 0; ++i) log_.erase(i);
  return Status::OK();
}

// --- RaftNode -------------------------------------------------------------

RaftNode::RaftNode(RaftOptions options, RaftStorage* storage, StateMachine* state_machine, SendFn send)
    : options_(std::move(options)),
      storage_(storage),
      sm_(state_machine),
      send_(std::move(send)),
      rng_(options_.seed) {}

Status RaftNode::Open(uint64_t now_ms) {
  now_ = now_ms;
  HardState hs;
  Status st = storage_->Load(&hs, &snapshot_, &log_);
  if (!st.ok()) return st;
  for (size_t i = 0; i < log_.size(); ++i) {
    if (log_[i].index != snapshot_.last_index + 1 + i) {
      return Status::Corruption(fmt::format("raft node {}: log entry {} found where {} was expected",
                                            options_.id, log_[i].index, snapshot_.last_index + 1 + i));
    }
  }
  term_ = hs.term;
  vote_ = hs.vote;
  commit_ = applied_ = snapshot_.last_index;
  if (snapshot_.last_index > 0) sm_->Restore(snapshot_);
  RecomputeConfig();
  role_ = Role::kFollower;
  leader_.clear();
  // A node that is the only voter elects itself at once instead of waiting.
  if (config_.voters.size() == 1 && IsVoter(options_.id)) {
    election_deadline_ = now_;
  } else {
    ResetElectionTimer();
  }
  return Status::OK();
}

bool RaftNode::IsEmpty() const { return term_ == 0 && log_.empty() && snapshot_.last_index == 0; }

Status RaftNode::Bootstrap(const Config& config) {
  if (!IsEmpty()) return Status::InvalidArgument(fmt::format("raft node {} already has state", options_.id));
  LogEntry e;
  e.index = 1;
  e.term = 1;
  e.type = EntryType::kConfig;
  e.config = config;
  Status st = storage_->WriteLog(1, 0, {e});
  if (!st.ok()) return st;
  term_ = 1;
  st = storage_->SaveHardState(HardState{term_, ""});
  if (!st.ok()) return st;
  log_.push_back(e);
  RecomputeConfig();
  if (config_.voters.size() == 1 && IsVoter(options_.id)) election_deadline_ = now_;
  return Status::OK();
}

uint64_t RaftNode::last_index() const {
  return log_.empty() ? snapshot_.last_index : log_.back().index;
}

uint64_t RaftNode::LastTerm() const { return log_.empty() ? snapshot_.last_term : log_.back().term; }

const LogEntry* RaftNode::EntryAt(uint64_t index) const {
  if (index <= snapshot_.last_index || index > last_index()) return nullptr;
  return &log_[index - snapshot_.last_index - 1];
}

uint64_t RaftNode::TermAt(uint64_t index) const {
  if (index == 0) return 0;
  if (index == snapshot_.last_index) return snapshot_.last_term;
  const LogEntry* e = EntryAt(index);
  return e == nullptr ? 0 : e->term;
}

bool RaftNode::LogUpToDate(uint64_t last_index, uint64_t last_term) const {
  return last_term > LastTerm() || (last_term == LastTerm() && last_index >= this->last_index());
}

void RaftNode::RecomputeConfig() {
  config_ = snapshot_.config;
  config_index_ = 0;
  for (auto it = log_.rbegin(); it != log_.rend(); ++it) {
    if (it->type == EntryType::kConfig) {
      config_ = it->config;
      config_index_ = it->index;
      break;
    }
  }
  if (role_ == Role::kLeader) {
    // Track exactly the voters of the new config.
    std::map<NodeId, Progress> next;
    for (const Member& m : config_.voters) {
      if (m.id == options_.id) continue;
      auto it = progress_.find(m.id);
      if (it != progress_.end()) {
        next[m.id] = it->second;
      } else {
        Progress p;
        p.next = last_index() + 1;
        p.last_ack_ms = now_;  // a new voter gets a full window to answer
        next[m.id] = p;
      }
    }
    progress_ = std::move(next);
  }
}

void RaftNode::SaveHardState() {
  Status st = storage_->SaveHardState(HardState{term_, vote_});
  if (!st.ok()) Fail(st);
}

void RaftNode::Fail(const Status& st) {
  if (!failed_) log::Error("raft node {}: storage failed, leaving the group: {}", options_.id, st.ToString());
  failed_ = true;
  role_ = Role::kFollower;
  leader_.clear();
}

void RaftNode::Send(Message m) {
  if (failed_) return;
  m.from = options_.id;
  if (m.term == 0) m.term = term_;
  send_(std::move(m));
}

void RaftNode::ResetElectionTimer() {
  std::uniform_int_distribution<uint64_t> dist(options_.election_timeout_ms, 2 * options_.election_timeout_ms - 1);
  election_deadline_ = now_ + dist(rng_);
}

bool RaftNode::InLease() const {
  if (role_ == Role::kLeader) return true;
  return heard_leader_ && !leader_.empty() && now_ < leader_contact_ms_ + options_.election_timeout_ms;
}

bool RaftNode::HasQuorum() const {
  if (failed_) return false;
  if (role_ == Role::kLeader) {
    size_t acked = IsVoter(options_.id) ? 1 : 0;
    for (const auto& [id, p] : progress_) {
      if (p.last_ack_ms + options_.election_timeout_ms > now_) ++acked;
    }
    return acked >= Majority();
  }
  return role_ == Role::kFollower && InLease();
}

uint64_t RaftNode::LastContact(const NodeId& peer) const {
  if (peer == options_.id) return now_;
  if (role_ == Role::kLeader) {
    auto it = progress_.find(peer);
    return it == progress_.end() ? 0 : it->second.last_ack_ms;
  }
  if (peer == leader_ && heard_leader_) return leader_contact_ms_;
  return 0;
}

void RaftNode::BecomeFollower(uint64_t term, const NodeId& leader) {
  if (term != term_) {
    term_ = term;
    vote_.clear();
    SaveHardState();
  }
  if (role_ == Role::kLeader) log::Info("raft node {}: leader steps down in term {}", options_.id, term_);
  role_ = Role::kFollower;
  if (leader != leader_) heard_leader_ = false;
  leader_ = leader;
  progress_.clear();
  votes_.clear();
  ResetElectionTimer();
}

void RaftNode::BecomePreCandidate() {
  role_ = Role::kPreCandidate;
  leader_.clear();
  heard_leader_ = false;
  votes_.clear();
  ResetElectionTimer();
  Campaign(/*pre_vote=*/true);
}

void RaftNode::BecomeCandidate() {
  role_ = Role::kCandidate;
  ++term_;
  vote_ = options_.id;
  SaveHardState();
  if (failed_) return;
  leader_.clear();
  heard_leader_ = false;
  votes_.clear();
  ResetElectionTimer();
  Campaign(/*pre_vote=*/false);
}

void RaftNode::Campaign(bool pre_vote) {
  votes_[options_.id] = true;
  if (votes_.size() >= Majority()) {  // the only voter
    if (pre_vote) {
      BecomeCandidate();
    } else {
      BecomeLeader();
    }
    return;
  }
  for (const Member& m : config_.voters) {
    if (m.id == options_.id) continue;
    Message msg;
    msg.type = MessageType::kVote;
    msg.to = m.id;
    msg.term = pre_vote ? term_ + 1 : term_;
    msg.pre_vote = pre_vote;
    msg.last_log_index = last_index();
    msg.last_log_term = LastTerm();
    Send(std::move(msg));
  }
}

void RaftNode::BecomeLeader() {
  role_ = Role::kLeader;
  leader_ = options_.id;
  heard_leader_ = true;
  leader_contact_ms_ = now_;
  votes_.clear();
  progress_.clear();
  quorum_check_ms_ = now_;
  log::Info("raft node {}: leader in term {} ({} voters)", options_.id, term_, config_.voters.size());
  LogEntry noop;
  noop.index = last_index() + 1;
  noop.term = term_;
  noop.type = EntryType::kNoop;
  term_start_index_ = noop.index;
  RecomputeConfig();  // fills progress_
  for (auto& [id, p] : progress_) {
    p.next = noop.index;
    p.match = 0;
    p.last_ack_ms = now_;
  }
  if (!AppendLocal({noop})) return;
  MaybeAdvanceCommit();
  BroadcastAppend();
}

void RaftNode::Tick(uint64_t now_ms) {
  if (now_ms > now_) now_ = now_ms;
  if (failed_) return;
  if (role_ == Role::kLeader) {
    if (now_ >= last_heartbeat_ms_ + options_.heartbeat_interval_ms) BroadcastAppend();
    if (now_ >= quorum_check_ms_ + options_.election_timeout_ms) {
      quorum_check_ms_ = now_;
      if (!HasQuorum()) {
        log::Warn("raft node {}: leader cannot reach a majority of {} voters; stepping down", options_.id,
                  config_.voters.size());
        BecomeFollower(term_, "");
      }
    }
    return;
  }
  if (now_ >= election_deadline_) {
    if (!IsVoter(options_.id)) {
      ResetElectionTimer();
      return;
    }
    if (options_.pre_vote) {
      BecomePreCandidate();
    } else {
      BecomeCandidate();
    }
  }
}

void RaftNode::Step(const Message& m) {
  if (failed_) return;
  if (m.term > term_) {
    if (m.type == MessageType::kVote) {
      // Vote lease: a node that hears from a leader does not help depose it.
      if (InLease()) {
        Message reply;
        reply.type = MessageType::kVoteReply;
        reply.to = m.from;
        reply.pre_vote = m.pre_vote;
        reply.granted = false;
        Send(std::move(reply));
        return;
      }
      if (!m.pre_vote) BecomeFollower(m.term, "");
    } else if (m.type == MessageType::kVoteReply && m.pre_vote && m.granted) {
      // A granted pre-vote carries the proposed term; nothing to adopt.
    } else {
      const bool from_leader = m.type == MessageType::kAppend || m.type == MessageType::kSnapshot;
      BecomeFollower(m.term, from_leader ? m.from : "");
    }
  } else if (m.term < term_) {
    if (m.type == MessageType::kVote) {
      Message reply;
      reply.type = MessageType::kVoteReply;
      reply.to = m.from;
      reply.pre_vote = m.pre_vote;
      reply.granted = false;
      Send(std::move(reply));
    } else if (m.type == MessageType::kAppend || m.type == MessageType::kSnapshot) {
      // Tell the stale leader about the newer term.
      Message reply;
      reply.type = m.type == MessageType::kAppend ? MessageType::kAppendReply : MessageType::kSnapshotReply;
      reply.to = m.from;
      reply.success = false;
      Send(std::move(reply));
    }
    return;
  }
  if (failed_) return;
  switch (m.type) {
    case MessageType::kVote: HandleVote(m); break;
    case MessageType::kVoteReply: HandleVoteReply(m); break;
    case MessageType::kAppend: HandleAppend(m); break;
    case MessageType::kAppendReply: HandleAppendReply(m); break;
    case MessageType::kSnapshot: HandleSnapshot(m); break;
    case MessageType::kSnapshotReply: HandleSnapshotReply(m); break;
  }
}

void RaftNode::HandleVote(const Message& m) {
  Message reply;
  reply.type = MessageType::kVoteReply;
  reply.to = m.from;
  reply.pre_vote = m.pre_vote;
  const bool up_to_date = LogUpToDate(m.last_log_index, m.last_log_term);
  if (m.pre_vote) {
    // m.term >= term_ + 1 was checked as "> term_" above, or equals term_:
    // grant only for a future term, never while a leader is heard.
    reply.granted = m.term > term_ && up_to_date && !InLease();
    reply.term = reply.granted ? m.term : term_;
  } else {
    reply.granted = (vote_.empty() || vote_ == m.from) && up_to_date && m.term == term_;
    if (reply.granted) {
      vote_ = m.from;
      SaveHardState();  // durable before the vote leaves
      if (failed_) return;
      ResetElectionTimer();
    }
  }
  Send(std::move(reply));
}

void RaftNode::HandleVoteReply(const Message& m) {
  if (m.pre_vote) {
    if (role_ != Role::kPreCandidate || m.term != term_ + 1) return;
  } else {
    if (role_ != Role::kCandidate || m.term != term_) return;
  }
  if (!IsVoter(m.from)) return;
  votes_[m.from] = m.granted;
  size_t granted = 0;
  for (const auto& [id, g] : votes_) granted += g ? 1 : 0;
  if (granted >= Majority()) {
    if (m.pre_vote) {
      BecomeCandidate();
    } else {
      BecomeLeader();
    }
  }
}

void RaftNode::HandleAppend(const Message& m) {
  // m.term == term_ here.
  if (role_ != Role::kFollower || leader_ != m.from) {
    // A candidate at this term learns who won.
    BecomeFollower(term_, m.from);
  }
  heard_leader_ = true;
  leader_contact_ms_ = now_;
  ResetElectionTimer();

  Message reply;
  reply.type = MessageType::kAppendReply;
  reply.to = m.from;

  // Skip what the snapshot already covers: those entries are committed, so
  // they match every leader's log.
  uint64_t prev_index = m.prev_index;
  uint64_t prev_term = m.prev_term;
  size_t skip = 0;
  if (prev_index < snapshot_.last_index) {
    while (skip < m.entries.size() && m.entries[skip].index <= snapshot_.last_index) ++skip;
    if (skip == m.entries.size()) {
      reply.success = true;
      reply.match_index = snapshot_.last_index;
      Send(std::move(reply));
      return;
    }
    prev_index = snapshot_.last_index;
    prev_term = snapshot_.last_term;
  }
  if (prev_index > last_index()) {
    reply.success = false;
    reply.conflict_index = last_index() + 1;
    reply.conflict_term = 0;
    Send(std::move(reply));
    return;
  }
  const uint64_t local_prev_term = TermAt(prev_index);
  if (local_prev_term != prev_term) {
    reply.success = false;
    reply.conflict_term = local_prev_term;
    uint64_t first = prev_index;
    while (first > snapshot_.last_index + 1 && TermAt(first - 1) == local_prev_term) --first;
    reply.conflict_index = first;
    Send(std::move(reply));
    return;
  }
  // Find the first entry that is new or conflicts; keep the rest.
  std::vector<LogEntry> to_append;
  for (size_t i = skip; i < m.entries.size(); ++i) {
    const LogEntry& e = m.entries[i];
    if (e.index <= last_index()) {
      if (TermAt(e.index) == e.term) continue;
      if (e.index <= commit_) {
        Fail(Status::Internal(fmt::format("raft node {}: leader {} conflicts with committed entry {}",
                                          options_.id, m.from, e.index)));
        return;
      }
    }
    to_append.assign(m.entries.begin() + static_cast<ptrdiff_t>(i), m.entries.end());
    break;
  }
  if (!to_append.empty() && !AppendLocal(to_append)) return;
  const uint64_t last_new = prev_index + (m.entries.size() - skip);
  const uint64_t new_commit = std::min(m.commit, last_new);
  if (new_commit > commit_) {
    commit_ = new_commit;
    ApplyCommitted();
  }
  reply.success = true;
  reply.match_index = last_new;
  Send(std::move(reply));
}

bool RaftNode::AppendLocal(const std::vector<LogEntry>& entries) {
  const uint64_t from = entries.front().index;
  Status st = storage_->WriteLog(from, last_index(), entries);
  if (!st.ok()) {
    Fail(st);
    return false;
  }
  bool config_changed = false;
  // Truncate a conflicting suffix, then append.
  if (from <= last_index()) {
    for (uint64_t i = from; i <= last_index(); ++i) {
      if (EntryAt(i)->type == EntryType::kConfig) config_changed = true;
    }
    log_.resize(from - snapshot_.last_index - 1);
  }
  for (const LogEntry& e : entries) {
    if (e.type == EntryType::kConfig) config_changed = true;
    log_.push_back(e);
  }
  if (config_changed) {
    const bool was_voter = IsVoter(options_.id);
    RecomputeConfig();
    if (!was_voter && IsVoter(options_.id) && role_ != Role::kLeader) ResetElectionTimer();
  }
  return true;
}

void RaftNode::HandleAppendReply(const Message& m) {
  if (role_ != Role::kLeader) return;
  auto it = progress_.find(m.from);
  if (it == progress_.end()) return;
  Progress& p = it->second;
  p.last_ack_ms = now_;
  if (m.success) {
    if (m.match_index > p.match) p.match = m.match_index;
    if (p.next < p.match + 1) p.next = p.match + 1;
    MaybeAdvanceCommit();
    if (p.next <= last_index()) SendAppend(m.from);
    return;
  }
  if (m.conflict_index == 0) return;  // a stale-term refusal, not ours to act on
  uint64_t next = m.conflict_index;
  if (m.conflict_term != 0) {
    // If we have entries of that term, retry just past our last one.
    for (uint64_t i = last_index(); i > snapshot_.last_index; --i) {
      const uint64_t t = TermAt(i);
      if (t == m.conflict_term) {
        next = i + 1;
        break;
      }
      if (t < m.conflict_term) break;
    }
  }
  next = std::max<uint64_t>(next, p.match + 1);
  next = std::min(next, last_index() + 1);
  p.next = std::max<uint64_t>(next, 1);
  SendAppend(m.from);
}

void RaftNode::HandleSnapshot(const Message& m) {
  if (role_ != Role::kFollower || leader_ != m.from) BecomeFollower(term_, m.from);
  heard_leader_ = true;
  leader_contact_ms_ = now_;
  ResetElectionTimer();
  Message reply;
  reply.type = MessageType::kSnapshotReply;
  reply.to = m.from;
  const Snapshot& s = m.snapshot;
  if (s.last_index <= commit_) {
    reply.success = true;
    reply.match_index = commit_;
    Send(std::move(reply));
    return;
  }
  // Keep a log suffix that agrees with the snapshot; otherwise drop all.
  std::vector<LogEntry> keep;
  if (TermAt(s.last_index) == s.last_term && s.last_index <= last_index()) {
    keep.assign(log_.begin() + static_cast<ptrdiff_t>(s.last_index - snapshot_.last_index), log_.end());
  }
  const uint64_t drop_from = snapshot_.last_index + 1;
  const uint64_t drop_to = keep.empty() ? last_index() : s.last_index;
  Status st = storage_->SaveSnapshot(s, drop_from <= drop_to ? drop_from : 0, drop_to);
  if (!st.ok()) {
    Fail(st);
    return;
  }
  snapshot_ = s;
  log_ = std::move(keep);
  sm_->Restore(snapshot_);
  commit_ = applied_ = s.last_index;
  RecomputeConfig();
  reply.success = true;
  reply.match_index = s.last_index;
  Send(std::move(reply));
}

void RaftNode::HandleSnapshotReply(const Message& m) {
  if (role_ != Role::kLeader) return;
  auto it = progress_.find(m.from);
  if (it == progress_.end()) return;
  Progress& p = it->second;
  p.last_ack_ms = now_;
  if (!m.success) return;
  if (m.match_index > p.match) p.match = m.match_index;
  p.next = std::max(p.next, p.match + 1);
  MaybeAdvanceCommit();
  if (p.next <= last_index()) SendAppend(m.from);
}

void RaftNode::SendAppend(const NodeId& peer) {
  auto it = progress_.find(peer);
  if (it == progress_.end()) return;
  Progress& p = it->second;
  if (p.next <= snapshot_.last_index) {
    Message msg;
    msg.type = MessageType::kSnapshot;
    msg.to = peer;
    msg.snapshot = snapshot_;
    Send(std::move(msg));
    return;
  }
  Message msg;
  msg.type = MessageType::kAppend;
  msg.to = peer;
  msg.prev_index = p.next - 1;
  msg.prev_term = TermAt(msg.prev_index);
  msg.commit = commit_;
  const uint64_t last = std::min(last_index(), p.next - 1 + options_.max_entries_per_append);
  for (uint64_t i = p.next; i <= last; ++i) msg.entries.push_back(*EntryAt(i));
  Send(std::move(msg));
}

void RaftNode::BroadcastAppend() {
  last_heartbeat_ms_ = now_;
  for (const auto& [id, p] : progress_) SendAppend(id);
}

void RaftNode::MaybeAdvanceCommit() {
  if (role_ != Role::kLeader) return;
  for (uint64_t n = last_index(); n > commit_; --n) {
    if (TermAt(n) != term_) break;  // only entries of our term commit by counting
    size_t count = IsVoter(options_.id) ? 1 : 0;
    for (const auto& [id, p] : progress_) count += p.match >= n ? 1 : 0;
    if (count >= Majority()) {
      commit_ = n;
      ApplyCommitted();
      // Followers learn the new commit index now rather than with the next
      // heartbeat: a data request or snapshot that waits for a follower to
      // apply what the leader committed waits one round trip, not up to a
      // heartbeat interval (docs/cluster.md "Data path").
      if (role_ == Role::kLeader) BroadcastAppend();
      break;
    }
  }
}

void RaftNode::ApplyCommitted() {
  while (applied_ < commit_) {
    const LogEntry* e = EntryAt(applied_ + 1);
    if (e == nullptr) break;  // cannot happen: committed entries are kept until snapshotted
    sm_->Apply(*e);
    ++applied_;
  }
  // A leader removed by a committed config steps down.
  if (role_ == Role::kLeader && !IsVoter(options_.id) && config_index_ <= commit_) {
    log::Info("raft node {}: removed from the config; stepping down", options_.id);
    BroadcastAppend();  // let the others learn the commit index
    BecomeFollower(term_, "");
  }
  MaybeCompact();
}

void RaftNode::MaybeCompact() {
  if (applied_ - snapshot_.last_index < options_.snapshot_threshold) return;
  Status st = TEST_Compact();
  if (!st.ok()) Fail(st);
}

Status RaftNode::TEST_Compact() {
  if (applied_ <= snapshot_.last_index) return Status::OK();
  Snapshot s;
  s.last_index = applied_;
  s.last_term = TermAt(applied_);
  // The config as of applied_: the latest config entry at or before it.
  s.config = snapshot_.config;
  for (uint64_t i = applied_; i > snapshot_.last_index; --i) {
    const LogEntry* e = EntryAt(i);
    if (e->type == EntryType::kConfig) {
      s.config = e->config;
      break;
    }
  }
  s.data = sm_->TakeSnapshot();
  Status st = storage_->SaveSnapshot(s, snapshot_.last_index + 1, applied_);
  if (!st.ok()) return st;
  log_.erase(log_.begin(), log_.begin() + static_cast<ptrdiff_t>(applied_ - snapshot_.last_index));
  snapshot_ = std::move(s);
  RecomputeConfig();
  return Status::OK();
}

Result<uint64_t> RaftNode::Propose(std::string data) {
  if (role_ != Role::kLeader || failed_) {
    return Status::Unavailable(fmt::format("raft node {} is not the leader (leader: {})", options_.id,
                                           leader_.empty() ? "unknown" : leader_));
  }
  LogEntry e;
  e.index = last_index() + 1;
  e.term = term_;
  e.type = EntryType::kNormal;
  e.data = std::move(data);
  if (!AppendLocal({e})) return Status::IOError("raft log write failed");
  MaybeAdvanceCommit();
  BroadcastAppend();
  return e.index;
}

Result<uint64_t> RaftNode::ProposeConfigChange(const Member& member, bool remove) {
  if (role_ != Role::kLeader || failed_) {
    return Status::Unavailable(fmt::format("raft node {} is not the leader (leader: {})", options_.id,
                                           leader_.empty() ? "unknown" : leader_));
  }
  if (config_index_ > commit_) {
    return Status::InvalidArgument(fmt::format("a membership change (entry {}) is still in progress", config_index_));
  }
  if (commit_ < term_start_index_) {
    return Status::InvalidArgument("the leader has not committed an entry of its term yet");
  }
  Config next = config_;
  if (remove) {
    auto it = std::find_if(next.voters.begin(), next.voters.end(), [&](const Member& m) { return m.id == member.id; });
    if (it == next.voters.end()) return Status::InvalidArgument(fmt::format("node {} is not a member", member.id));
    next.voters.erase(it);
    if (next.voters.empty()) return Status::InvalidArgument("cannot remove the last member");
  } else {
    if (config_.Contains(member.id)) return Status::InvalidArgument(fmt::format("node {} is already a member", member.id));
    next.voters.push_back(member);
  }
  LogEntry e;
  e.index = last_index() + 1;
  e.term = term_;
  e.type = EntryType::kConfig;
  e.config = std::move(next);
  if (!AppendLocal({e})) return Status::IOError("raft log write failed");
  MaybeAdvanceCommit();
  BroadcastAppend();
  return e.index;
}

}  // namespace shale::cluster::raft

#include "src/cluster/cluster_node.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "src/cluster/raft.grpc.pb.h"
#include "src/cluster/raft_codec.h"
#include "src/cluster/raft_storage.h"
#include "src/cluster/rpc_stats.h"
#include "src/cluster/timestamp_service.h"
#include "src/common/errors.h"
#include "src/common/log.h"
#include "storage/meta_store.h"

namespace shale::cluster {

namespace {

// A queued message waits behind at most this many others for a peer; older
// ones are dropped (Raft resends what matters).
constexpr size_t kMaxPeerQueue = 128;
// Deadlines of one RPC.
constexpr std::chrono::milliseconds kRaftRpcDeadline{1000};
constexpr std::chrono::milliseconds kSnapshotRpcDeadline{5000};
constexpr std::chrono::milliseconds kJoinRpcDeadline{6000};
// How long a Join waits for its config change to commit.
constexpr std::chrono::milliseconds kJoinCommitWait{5000};
// The joiner thread's period.
constexpr std::chrono::milliseconds kJoinRetry{500};
// How long a metadata proposal may take, retries included, before the
// statement gives up (its outcome then unknown to the caller).
constexpr std::chrono::milliseconds kProposeDeadline{10000};
// One forwarded proposal.
constexpr std::chrono::milliseconds kProposeRpcDeadline{6000};
// The longest an AwaitApplied RPC waits, whatever the caller asks.
constexpr std::chrono::milliseconds kAwaitAppliedCap{5000};

void ToPb(const Status& st, StatusPb* out) {
  out->set_code(static_cast<uint32_t>(st.code()));
  out->set_mysql_code(st.code() == StatusCode::kSqlError ? st.mysql_code() : 0);
  out->set_message(st.message());
}

Status FromPb(const StatusPb& pb) {
  switch (static_cast<StatusCode>(pb.code())) {
    case StatusCode::kOk: return Status::OK();
    case StatusCode::kNotFound: return Status::NotFound(pb.message());
    case StatusCode::kCorruption: return Status::Corruption(pb.message());
    case StatusCode::kIOError: return Status::IOError(pb.message());
    case StatusCode::kInvalidArgument: return Status::InvalidArgument(pb.message());
    case StatusCode::kUnavailable: return Status::Unavailable(pb.message());
    case StatusCode::kSqlError: return Status::Sql(static_cast<uint16_t>(pb.mysql_code()), pb.message());
    default: return Status::Internal(pb.message());
  }
}

// The retryable error of a metadata change that could not be ordered.
Status NotOrdered(const std::string& node, const std::string& why) {
  return Status::Sql(static_cast<uint16_t>(ErrorCode::kUnknownCom),
                     fmt::format("Cluster metadata change not applied on node '{}': {}; retry", node, why));
}

std::vector<std::string> SplitLines(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < s.size()) {
    size_t end = s.find('\n', start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// A member heard from within the node timeout (this node: has a quorum).
bool IsLive(const NodeStatus& n) { return n.state == "online" || n.state == "member"; }

}  // namespace

class ClusterNode::Service final : public RaftService::Service {
 public:
  explicit Service(ClusterNode* node) : node_(node) {}
  grpc::Status RequestVote(grpc::ServerContext*, const RaftMessagePb* request, RaftMessagePb* reply) override {
    return node_->HandleRaft(*request, reply);
  }
  grpc::Status AppendEntries(grpc::ServerContext*, const RaftMessagePb* request, RaftMessagePb* reply) override {
    return node_->HandleRaft(*request, reply);
  }
  grpc::Status InstallSnapshot(grpc::ServerContext*, const RaftMessagePb* request, RaftMessagePb* reply) override {
    return node_->HandleRaft(*request, reply);
  }
  grpc::Status Join(grpc::ServerContext*, const JoinRequest* request, JoinResponse* response) override {
    return node_->HandleJoin(*request, response);
  }
  grpc::Status Propose(grpc::ServerContext*, const ProposeRequest* request, ProposeResponse* response) override {
    return node_->HandlePropose(*request, response);
  }
  grpc::Status Timestamps(grpc::ServerContext*, const TimestampRequest* request,
                          TimestampResponse* response) override {
    return node_->HandleTimestamps(*request, response);
  }
  grpc::Status AwaitApplied(grpc::ServerContext*, const AwaitAppliedRequest* request,
                            AwaitAppliedResponse* response) override {
    return node_->HandleAwaitApplied(*request, response);
  }

 private:
  ClusterNode* node_;
};

struct ClusterNode::Peer {
  std::string id;
  std::mutex mu;
  std::condition_variable cv;
  std::string address;                              // GUARDED_BY(mu)
  std::shared_ptr<RaftService::Stub> stub;          // GUARDED_BY(mu)
  std::deque<raft::Message> queue;                  // GUARDED_BY(mu)
  bool stop = false;                                // GUARDED_BY(mu)
  std::thread thread;
};

ClusterNode::ClusterNode(NodeIdentity identity, ClusterOptions options, storage::MetaStore* store)
    : identity_(std::move(identity)),
      options_(std::move(options)),
      store_(store),
      start_time_ms_(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                               std::chrono::steady_clock::now().time_since_epoch())
                                               .count())),
      service_(std::make_unique<Service>(this)) {}

ClusterNode::~ClusterNode() { Stop(); }

grpc::Service* ClusterNode::service() { return service_.get(); }

uint64_t ClusterNode::NowMs() const {
  const uint64_t now = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
  return now - start_time_ms_ + 1;  // never 0
}

raft::Member ClusterNode::SelfMember() const {
  return raft::Member{identity_.id, identity_.name, options_.rpc_address, options_.sql_address};
}

Status ClusterNode::Start() {
  std::lock_guard lock(mu_);
  raft_storage_ = std::make_unique<raft::MetaStoreRaftStorage>(store_);
  raft::RaftOptions ro;
  ro.id = identity_.id;
  ro.election_timeout_ms = options_.election_timeout_ms;
  ro.heartbeat_interval_ms = options_.heartbeat_interval_ms;
  ro.snapshot_threshold = options_.snapshot_threshold;
  ro.seed = std::random_device{}();
  raft_ = std::make_unique<raft::RaftNode>(ro, raft_storage_.get(), &metadata_,
                                           [this](raft::Message m) { OnSend(std::move(m)); });
  Status st = raft_->Open(NowMs());
  if (!st.ok()) return st;

  std::string stored;
  st = store_->Get(kSeedsKey, &stored);
  if (st.ok()) {
    seeds_ = SplitLines(stored);
  } else if (!st.IsNotFound()) {
    return st;
  }
  bool seeds_changed = false;
  for (const std::string& a : options_.join) {
    if (std::find(seeds_.begin(), seeds_.end(), a) == seeds_.end()) {
      seeds_.push_back(a);
      seeds_changed = true;
    }
  }
  if (seeds_changed) {
    std::string joined;
    for (const std::string& a : seeds_) joined += a + "\n";
    st = store_->Put(kSeedsKey, joined);
    if (!st.ok()) return st;
  }

  if (raft_->IsEmpty()) {
    if (options_.join.empty()) {
      log::Info("cluster: node {} bootstraps a new one-node cluster", identity_.id);
      st = raft_->Bootstrap(raft::Config{{SelfMember()}});
      if (!st.ok()) return st;
    } else {
      log::Info("cluster: node {} will join the cluster at {}", identity_.id, fmt::join(options_.join, ", "));
    }
  } else {
    log::Info("cluster: node {} restarts in term {} with {} member(s) in its config", identity_.id, raft_->term(),
              raft_->config().voters.size());
    if (!options_.join.empty() && raft_->config().voters.size() == 1 && raft_->config().Contains(identity_.id)) {
      // Two clusters never merge: that would need one of them to drop its log.
      log::Warn("cluster: node {} leads its own one-node cluster; --join ignored (start it with an empty data "
                "directory to join another cluster)",
                identity_.id);
    }
  }
  raft_->Tick(NowMs());  // a lone voter becomes leader now
  UpdateStatus();
  {
    std::lock_guard sl(stop_mu_);
    stopping_ = false;
  }
  started_ = true;
  ticker_ = std::thread([this] { TickLoop(); });
  joiner_ = std::thread([this] { JoinLoop(); });
  return Status::OK();
}

void ClusterNode::Stop() {
  if (!started_) return;
  {
    std::lock_guard sl(stop_mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (ticker_.joinable()) ticker_.join();
  if (joiner_.joinable()) joiner_.join();
  std::map<std::string, std::unique_ptr<Peer>> peers;
  {
    std::lock_guard lock(mu_);
    peers.swap(peers_);
    raft_.reset();  // handlers still running see a stopped node
  }
  for (auto& [id, p] : peers) {
    {
      std::lock_guard pl(p->mu);
      p->stop = true;
    }
    p->cv.notify_all();
  }
  for (auto& [id, p] : peers) {
    if (p->thread.joinable()) p->thread.join();
  }
  started_ = false;
  has_quorum_.store(false, std::memory_order_release);
  is_leader_.store(false, std::memory_order_release);
}

void ClusterNode::OnSend(raft::Message m) {
  if (raft_ == nullptr) return;
  const bool is_reply = m.type == raft::MessageType::kVoteReply || m.type == raft::MessageType::kAppendReply ||
                        m.type == raft::MessageType::kSnapshotReply;
  if (is_reply) {
    // Replies travel back in the RPC's response.
    if (!capture_for_.empty() && m.to == capture_for_ && !captured_) captured_ = std::move(m);
    return;
  }
  const raft::Member* member = raft_->config().Find(m.to);
  if (member == nullptr) member = metadata_.members().Find(m.to);
  if (member == nullptr || member->address.empty()) return;
  Peer* peer = PeerFor(m.to, member->address);
  {
    std::lock_guard pl(peer->mu);
    if (peer->queue.size() >= kMaxPeerQueue) peer->queue.pop_front();
    peer->queue.push_back(std::move(m));
  }
  peer->cv.notify_one();
}

ClusterNode::Peer* ClusterNode::PeerFor(const std::string& id, const std::string& address) {
  auto it = peers_.find(id);
  if (it == peers_.end()) {
    auto peer = std::make_unique<Peer>();
    peer->id = id;
    peer->address = address;
    peer->stub = RaftService::NewStub(Dial(address));
    Peer* raw = peer.get();
    peer->thread = std::thread([this, raw] { PeerLoop(raw); });
    it = peers_.emplace(id, std::move(peer)).first;
  } else {
    std::lock_guard pl(it->second->mu);
    if (it->second->address != address) {
      it->second->address = address;
      it->second->stub = RaftService::NewStub(Dial(address));
    }
  }
  return it->second.get();
}

void ClusterNode::PeerLoop(Peer* peer) {
  for (;;) {
    raft::Message m;
    std::shared_ptr<RaftService::Stub> stub;
    {
      std::unique_lock pl(peer->mu);
      peer->cv.wait(pl, [&] { return peer->stop || !peer->queue.empty(); });
      if (peer->stop) return;
      m = std::move(peer->queue.front());
      peer->queue.pop_front();
      stub = peer->stub;
    }
    RaftMessagePb request;
    raft::ToProto(m, &request);
    request.set_epoch(epoch_.load(std::memory_order_acquire));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         (m.type == raft::MessageType::kSnapshot ? kSnapshotRpcDeadline : kRaftRpcDeadline));
    RaftMessagePb response;
    grpc::Status st;
    switch (m.type) {
      case raft::MessageType::kVote: st = stub->RequestVote(&context, request, &response); break;
      case raft::MessageType::kAppend: st = stub->AppendEntries(&context, request, &response); break;
      case raft::MessageType::kSnapshot: st = stub->InstallSnapshot(&context, request, &response); break;
      default: continue;
    }
    if (!st.ok()) {
      log::Debug("cluster: {} to node {} failed: {}", static_cast<int>(m.type), peer->id, st.error_message());
      continue;
    }
    raft::Message reply;
    if (response.type() == 0 || !raft::FromProto(response, &reply)) continue;
    std::lock_guard lock(mu_);
    if (raft_ == nullptr) continue;
    raft_->Tick(NowMs());
    raft_->Step(reply);
    UpdateStatus();
  }
}

grpc::Status ClusterNode::HandleRaft(const RaftMessagePb& request, RaftMessagePb* reply) {
  raft::Message m;
  if (!raft::FromProto(request, &m)) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, fmt::format("unknown raft message type {}", request.type()));
  }
  std::lock_guard lock(mu_);
  if (raft_ == nullptr) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "node is starting");
  if (m.to != identity_.id) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        fmt::format("message for node {} reached node {}", m.to, identity_.id));
  }
  if (!raft_->config().Contains(m.from) && request.epoch() < metadata_.epoch()) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        fmt::format("stale epoch: node {} (epoch {}) is not a member at epoch {}", m.from,
                                    request.epoch(), metadata_.epoch()));
  }
  raft_->Tick(NowMs());
  capture_for_ = m.from;
  captured_.reset();
  raft_->Step(m);
  capture_for_.clear();
  if (captured_) {
    raft::ToProto(*captured_, reply);
    reply->set_epoch(metadata_.epoch());
    captured_.reset();
  }
  UpdateStatus();
  return grpc::Status::OK;
}

void ClusterNode::FillJoinResponse(JoinResponse* response) {
  raft::ToProto(raft_->config(), response->mutable_config());
  response->set_epoch(metadata_.epoch());
  response->set_leader_address(options_.rpc_address);
}

grpc::Status ClusterNode::HandleJoin(const JoinRequest& request, JoinResponse* response) {
  const raft::Member member = raft::FromProto(request.member());
  if (member.id.empty() || member.address.empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "a joining node needs an id and an address");
  }
  const auto give_up = std::chrono::steady_clock::now() + kJoinCommitWait;
  for (;;) {
    std::unique_lock lock(mu_);
    if (raft_ == nullptr) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "node is starting");
    if (raft_->role() != raft::Role::kLeader) {
      const raft::Member* leader = raft_->config().Find(raft_->leader());
      if (leader == nullptr || leader->address.empty() || request.hops() >= 2 || leader->id == identity_.id) {
        return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                            fmt::format("node {} knows no leader to admit node {}", identity_.id, member.id));
      }
      const std::string address = leader->address;
      lock.unlock();
      // Forward to the leader.
      JoinRequest forwarded = request;
      forwarded.set_hops(request.hops() + 1);
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + kJoinRpcDeadline);
      std::unique_ptr<RaftService::Stub> stub = RaftService::NewStub(Dial(address));
      return stub->Join(&context, forwarded, response);
    }
    if (const raft::Member* existing = raft_->config().Find(member.id); existing != nullptr) {
      if (*existing == member) {
        // Already in (a restart within the node timeout): nothing to change
        // once the entry that added it is committed.
        if (raft_->commit_index() >= raft_->last_index() || std::chrono::steady_clock::now() > give_up) {
          FillJoinResponse(response);
          return grpc::Status::OK;
        }
      } else {
        // Same node id at a new address: remove it; its next Join re-adds it.
        auto idx = raft_->ProposeConfigChange(member, /*remove=*/true);
        return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                            fmt::format("node {} moved to {}; {}; retry", member.id, member.address,
                                        idx.ok() ? "removing the old entry" : idx.status().message()));
      }
    } else {
      auto idx = raft_->ProposeConfigChange(member, /*remove=*/false);
      if (idx.ok()) {
        log::Info("cluster: leader {} adds node {} ({}, {}) at index {}", identity_.id, member.id, member.name,
                  member.address, *idx);
        const uint64_t term = raft_->term();
        const uint64_t index = *idx;
        while (std::chrono::steady_clock::now() < give_up) {
          if (raft_->commit_index() >= index) {
            if (raft_->TermAt(index) != term && raft_->snapshot_index() < index) break;  // overwritten
            FillJoinResponse(response);
            return grpc::Status::OK;
          }
          lock.unlock();
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
          lock.lock();
        }
        return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                            fmt::format("adding node {} did not commit in time; retry", member.id));
      }
      if (idx.status().code() != StatusCode::kInvalidArgument) {
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, idx.status().message());
      }
    }
    // Another change is in progress: wait and retry.
    lock.unlock();
    if (std::chrono::steady_clock::now() > give_up) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "another membership change is in progress; retry");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void ClusterNode::TickLoop() {
  for (;;) {
    {
      std::unique_lock sl(stop_mu_);
      if (stop_cv_.wait_for(sl, std::chrono::milliseconds(options_.tick_ms), [&] { return stopping_; })) return;
    }
    std::lock_guard lock(mu_);
    if (raft_ == nullptr) return;
    raft_->Tick(NowMs());
    DetectFailures();
    UpdateStatus();
  }
}

void ClusterNode::DetectFailures() {
  if (raft_->role() != raft::Role::kLeader) return;
  const uint64_t now = NowMs();
  const raft::Config& config = raft_->config();
  // Remove only while the members that do answer are a majority of the
  // current config: a cluster never shrinks itself below a majority of what
  // it was (two of three down leaves the survivor refusing, not alone).
  size_t live = 0;
  for (const raft::Member& m : config.voters) {
    if (m.id == identity_.id || raft_->LastContact(m.id) + options_.election_timeout_ms > now) ++live;
  }
  if (live < config.voters.size() / 2 + 1) return;
  for (const raft::Member& member : config.voters) {
    if (member.id == identity_.id) continue;
    const uint64_t last = raft_->LastContact(member.id);
    if (last + options_.node_timeout_ms > now) continue;
    // A copy: proposing the change replaces the config `member` lives in.
    const raft::Member m = member;
    auto idx = raft_->ProposeConfigChange(m, /*remove=*/true);
    if (idx.ok()) {
      log::Warn("cluster: node {} ({}, {}) silent for {} ms; removing it (index {})", m.id, m.name, m.address,
                now - last, *idx);
    }
    return;  // one change at a time
  }
}

void ClusterNode::UpdateStatus() {
  const uint64_t now = NowMs();
  const bool quorum = raft_->HasQuorum();
  if (quorum) last_quorum_ms_ = now;
  if (has_quorum_.load(std::memory_order_relaxed) != quorum) {
    if (quorum) {
      log::Info("cluster: node {} has a quorum (term {}, leader {})", identity_.id, raft_->term(), raft_->leader());
    } else {
      log::Warn("cluster: node {} lost its quorum (term {})", identity_.id, raft_->term());
    }
  }
  has_quorum_.store(quorum, std::memory_order_release);
  epoch_.store(metadata_.epoch(), std::memory_order_release);
  applied_index_.store(metadata_.applied_index(), std::memory_order_release);
  commit_index_.store(raft_->commit_index(), std::memory_order_release);
  term_.store(raft_->term(), std::memory_order_release);
  was_leader_ = raft_->role() == raft::Role::kLeader;
  is_leader_.store(was_leader_, std::memory_order_release);
  applied_cv_.notify_all();
}

bool ClusterNode::AwaitApplied(uint64_t index, std::chrono::milliseconds timeout) {
  if (applied_index() >= index) return true;
  std::unique_lock lock(mu_);
  return WaitApplied(lock, index, std::chrono::steady_clock::now() + timeout);
}

bool ClusterNode::WaitApplied(std::unique_lock<std::mutex>& lock, uint64_t index,
                              std::chrono::steady_clock::time_point until) {
  while (raft_ != nullptr && metadata_.applied_index() < index) {
    // A node cut off from the majority will not see the entry commit soon.
    if (!HasQuorum()) break;
    if (applied_cv_.wait_until(lock, until) == std::cv_status::timeout) break;
  }
  return raft_ != nullptr && metadata_.applied_index() >= index;
}

Result<std::pair<uint64_t, ApplyResult>> ClusterNode::ProposeAsLeader(std::unique_lock<std::mutex>& lock,
                                                                      const std::string& bytes) {
  const uint64_t term = raft_->term();
  SHALE_ASSIGN_OR_RETURN(uint64_t index, raft_->Propose(bytes));
  UpdateStatus();
  const auto until = std::chrono::steady_clock::now() + kProposeDeadline;
  if (!WaitApplied(lock, index, until)) {
    if (!HasQuorum()) {
      // As CheckQuorum says it (its lock is held here); the entry may still
      // commit once the majority is back.
      return Status::Sql(static_cast<uint16_t>(ErrorCode::kUnknownCom),
                         fmt::format("Cluster has no quorum: node '{}' cannot reach a majority of the {} cluster "
                                     "member(s); the statement's change may or may not be applied, retry later",
                                     identity_.name, raft_ ? raft_->config().voters.size() : 0));
    }
    return NotOrdered(identity_.name, fmt::format("entry {} was not committed in time (lost its leader?)", index));
  }
  const auto* kept = metadata_.ResultAt(index);
  if (kept == nullptr || kept->first != term) {
    return NotOrdered(identity_.name, fmt::format("the leader changed and entry {} was replaced", index));
  }
  return std::make_pair(index, kept->second);
}

ApplyResult ClusterNode::ProposeCatalog(const std::string& command) {
  MetadataCommandPb cmd;
  cmd.set_catalog(command);
  return ProposeMetadata(cmd);
}

ApplyResult ClusterNode::ProposeMetadata(const MetadataCommandPb& command) {
  const std::string bytes = command.SerializeAsString();
  const auto until = std::chrono::steady_clock::now() + kProposeDeadline;
  std::string last_error = "no leader";
  while (std::chrono::steady_clock::now() < until) {
    std::unique_lock lock(mu_);
    if (raft_ == nullptr) return ApplyResult{NotOrdered(identity_.name, "the node is stopping"), 0};
    if (raft_->role() == raft::Role::kLeader) {
      auto r = ProposeAsLeader(lock, bytes);
      if (!r.ok()) return ApplyResult{r.status(), 0};
      return r->second;
    }
    const raft::Member* leader = raft_->config().Find(raft_->leader());
    if (leader == nullptr || leader->address.empty()) {
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    const std::string address = leader->address;
    ProposeRequest request;
    request.set_command(bytes);
    request.set_epoch(metadata_.epoch());
    lock.unlock();
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kProposeRpcDeadline);
    ProposeResponse response;
    std::unique_ptr<RaftService::Stub> stub = RaftService::NewStub(Dial(address));
    grpc::Status st = stub->Propose(&context, request, &response);
    if (!st.ok()) {
      last_error = fmt::format("leader at {}: {}", address, st.error_message());
      if (st.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
        return ApplyResult{NotOrdered(identity_.name, last_error), 0};  // may or may not have been appended
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    // Applied on the leader; wait until it is applied here too.
    lock.lock();
    if (!WaitApplied(lock, response.index(), until)) {
      return ApplyResult{NotOrdered(identity_.name, fmt::format("entry {} committed on the leader but not yet "
                                                                "applied on this node",
                                                                response.index())),
                         0};
    }
    return ApplyResult{FromPb(response.status()), response.value()};
  }
  return ApplyResult{NotOrdered(identity_.name, last_error), 0};
}

grpc::Status ClusterNode::HandlePropose(const ProposeRequest& request, ProposeResponse* response) {
  std::unique_lock lock(mu_);
  if (raft_ == nullptr) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "node is starting");
  if (raft_->role() != raft::Role::kLeader) {
    const raft::Member* leader = raft_->config().Find(raft_->leader());
    if (leader == nullptr || leader->address.empty() || request.hops() >= 2 || leader->id == identity_.id) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, fmt::format("node {} knows no leader", identity_.id));
    }
    const std::string address = leader->address;
    lock.unlock();
    ProposeRequest forwarded = request;
    forwarded.set_hops(request.hops() + 1);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kProposeRpcDeadline);
    std::unique_ptr<RaftService::Stub> stub = RaftService::NewStub(Dial(address));
    return stub->Propose(&context, forwarded, response);
  }
  auto r = ProposeAsLeader(lock, request.command());
  if (!r.ok()) return grpc::Status(grpc::StatusCode::UNAVAILABLE, r.status().message());
  response->set_index(r->first);
  response->set_term(raft_ ? raft_->term() : 0);
  ToPb(r->second.status, response->mutable_status());
  response->set_value(r->second.value);
  return grpc::Status::OK;
}

grpc::Status ClusterNode::HandleTimestamps(const TimestampRequest& request, TimestampResponse* response) {
  if (timestamp_service_ == nullptr) return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "no timestamp service");
  return timestamp_service_->Handle(request, response);
}

grpc::Status ClusterNode::HandleAwaitApplied(const AwaitAppliedRequest& request, AwaitAppliedResponse* response) {
  const auto timeout = std::min(std::chrono::milliseconds(request.timeout_ms()), kAwaitAppliedCap);
  const bool reached = AwaitApplied(request.index(), timeout);
  response->set_applied_index(applied_index());
  response->set_reached(reached);
  return grpc::Status::OK;
}

bool ClusterNode::AwaitMembersApplied(uint64_t index, std::chrono::milliseconds timeout) {
  std::vector<std::string> addresses;
  for (const NodeStatus& n : Nodes()) {
    if (n.id == identity_.id || n.address.empty()) continue;
    if (!IsLive(n)) continue;
    addresses.push_back(n.address);
  }
  std::vector<char> reached(addresses.size(), 0);
  std::vector<std::thread> waiters;
  waiters.reserve(addresses.size());
  for (size_t i = 0; i < addresses.size(); ++i) {
    waiters.emplace_back([&, i] {
      AwaitAppliedRequest request;
      request.set_index(index);
      request.set_timeout_ms(static_cast<uint32_t>(timeout.count()));
      AwaitAppliedResponse response;
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + timeout + std::chrono::milliseconds(500));
      std::unique_ptr<RaftService::Stub> stub = RaftService::NewStub(Dial(addresses[i]));
      grpc::Status st = stub->AwaitApplied(&context, request, &response);
      reached[i] = st.ok() && response.reached();
    });
  }
  for (std::thread& t : waiters) t.join();
  const bool all = std::all_of(reached.begin(), reached.end(), [](char r) { return r != 0; });
  if (!all) log::Warn("node {}: not every live member applied metadata entry {} within {} ms", identity_.name, index,
                      timeout.count());
  return all;
}

std::vector<std::string> ClusterNode::MemberNames() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const raft::Member& m : metadata_.members().voters) out.push_back(m.name);
  if (out.empty()) out.push_back(identity_.name);
  return out;
}

std::vector<std::string> ClusterNode::MemberIds() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const raft::Member& m : metadata_.members().voters) out.push_back(m.id);
  return out;
}

std::optional<NodeAddress> ClusterNode::AddressOf(const std::string& name) const {
  for (const NodeStatus& n : Nodes()) {
    if (n.name != name) continue;
    return NodeAddress{n.id, n.address, n.sql_address, IsLive(n)};
  }
  return std::nullopt;
}

bool ClusterNode::IsLeader() const { return is_leader_.load(std::memory_order_acquire); }

std::optional<std::string> ClusterNode::LeaderAddress() const {
  std::lock_guard lock(mu_);
  if (raft_ == nullptr || raft_->role() == raft::Role::kLeader) return std::nullopt;
  const raft::Member* leader = raft_->config().Find(raft_->leader());
  if (leader == nullptr || leader->address.empty()) return std::nullopt;
  return leader->address;
}

uint64_t ClusterNode::TimestampHighWater() const {
  std::lock_guard lock(mu_);
  return metadata_.timestamp_high_water();
}

bool ClusterNode::NeedsJoin() {
  if (!raft_->config().Contains(identity_.id)) return true;
  if (raft_->config().voters.size() <= 1) return false;  // a lone cluster of its own
  return !HasQuorum() && NowMs() > last_quorum_ms_ + 2 * options_.election_timeout_ms;
}

std::vector<std::string> ClusterNode::JoinTargets() {
  std::vector<std::string> targets = seeds_;
  for (const raft::Member& m : raft_->config().voters) {
    if (m.id == identity_.id || m.address.empty()) continue;
    if (std::find(targets.begin(), targets.end(), m.address) == targets.end()) targets.push_back(m.address);
  }
  return targets;
}

void ClusterNode::JoinLoop() {
  size_t attempt = 0;
  for (;;) {
    {
      std::unique_lock sl(stop_mu_);
      if (stop_cv_.wait_for(sl, kJoinRetry, [&] { return stopping_; })) return;
    }
    JoinRequest request;
    std::string target;
    {
      std::lock_guard lock(mu_);
      if (raft_ == nullptr || !NeedsJoin()) continue;
      std::vector<std::string> targets = JoinTargets();
      if (targets.empty()) continue;
      target = targets[attempt++ % targets.size()];
      raft::ToProto(SelfMember(), request.mutable_member());
      request.set_epoch(metadata_.epoch());
      request.set_term(raft_->term());
    }
    if (target == options_.rpc_address) continue;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kJoinRpcDeadline);
    JoinResponse response;
    std::unique_ptr<RaftService::Stub> stub = RaftService::NewStub(Dial(target));
    grpc::Status st = stub->Join(&context, request, &response);
    if (st.ok()) {
      log::Info("cluster: node {} is a member (via {}, leader {}, epoch {}, {} members)", identity_.id, target,
                response.leader_address(), response.epoch(), response.config().voters_size());
    } else {
      log::Debug("cluster: join via {} failed: {}", target, st.error_message());
    }
  }
}

Status ClusterNode::CheckQuorum() const {
  if (HasQuorum()) return Status::OK();
  size_t members = 0;
  {
    std::lock_guard lock(mu_);
    if (raft_ != nullptr) members = raft_->config().voters.size();
  }
  return Status::Sql(static_cast<uint16_t>(ErrorCode::kUnknownCom),
                     fmt::format("Cluster has no quorum: node '{}' cannot reach a majority of the {} cluster "
                                 "member(s); the statement was not run, retry later",
                                 identity_.name, members));
}

std::vector<NodeStatus> ClusterNode::Nodes() const {
  std::vector<NodeStatus> out;
  std::lock_guard lock(mu_);
  if (raft_ == nullptr) return out;
  const uint64_t now = NowMs();
  // The applied membership; a node not yet admitted shows itself alone.
  raft::Config members = metadata_.members();
  if (!members.Contains(identity_.id) && members.voters.empty()) members.voters.push_back(SelfMember());
  for (const raft::Member& m : members.voters) {
    NodeStatus s;
    s.id = m.id;
    s.name = m.name;
    s.address = m.address;
    s.sql_address = m.sql_address;
    s.epoch = metadata_.epoch();
    s.is_leader = m.id == raft_->leader();
    if (m.id == identity_.id) {
      s.last_heartbeat_ms = 0;
      s.state = HasQuorum() ? "online" : "no-quorum";
    } else {
      const uint64_t last = raft_->LastContact(m.id);
      if (last == 0) {
        s.state = raft_->role() == raft::Role::kLeader || s.is_leader ? "unreachable" : "member";
      } else {
        s.last_heartbeat_ms = static_cast<int64_t>(now - std::min(now, last));
        s.state = now - std::min(now, last) <= options_.node_timeout_ms ? "online" : "unreachable";
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace shale::cluster

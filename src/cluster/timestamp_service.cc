#include "src/cluster/timestamp_service.h"

#include <algorithm>
#include <random>

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>

#include "src/cluster/cluster_node.h"
#include "src/cluster/raft.grpc.pb.h"
#include "src/cluster/rpc_stats.h"
#include "src/common/critical_path.h"
#include "src/common/errors.h"
#include "src/common/log.h"
#include "src/common/module_profile.h"

namespace shale::cluster {
namespace {

constexpr std::chrono::milliseconds kRpcDeadline{3000};

Status NoTimestamps(const std::string& why) {
  return Status::Sql(static_cast<uint16_t>(ErrorCode::kUnknownCom),
                     fmt::format("Cluster timestamp service unavailable: {}; retry", why));
}

}  // namespace

// One caller's request in a follower's batch.
struct ClusterTimestamps::Pending {
  uint32_t begin = 0;
  bool read = false;
  std::vector<uint64_t> begun;
  uint64_t read_ts = 0;
  uint64_t finished_high = 0;
  uint64_t last_handed_out = 0;
  Status status;
  bool done = false;
};

ClusterTimestamps::ClusterTimestamps(ClusterNode* node, const txn::TimestampOracle* local,
                                     TimestampServiceOptions options)
    : node_(node),
      local_(local),
      options_(options),
      incarnation_((static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                              std::chrono::system_clock::now().time_since_epoch())
                                              .count())
                     << 12) |
                    (std::random_device{}() & 0xfff)) {
  reporter_ = std::thread([this] { ReportLoop(); });
}

ClusterTimestamps::~ClusterTimestamps() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  reporter_cv_.notify_all();
  if (reporter_.joinable()) reporter_.join();
}

uint64_t ClusterTimestamps::NowMs() const {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

Status ClusterTimestamps::EnsureLeader(std::unique_lock<std::mutex>& lock) {
  const uint64_t term = node_->term();
  if (!node_->IsLeader()) return NoTimestamps("this node is not the metadata leader");
  if (leader_term_ == term && term != 0) return Status::OK();
  // A new term: fence off every timestamp an earlier leader may have
  // handed out. The fence entry commits after every earlier entry, so once
  // it is applied the applied mark covers all of them.
  MetadataCommandPb fence;
  fence.set_timestamp_high_water(std::max(node_->TimestampHighWater(), local_->last()) + 1);
  ApplyResult r = node_->ProposeMetadata(fence);
  if (!r.status.ok()) return r.status;
  if (node_->term() != term || !node_->IsLeader()) return NoTimestamps("the metadata leader changed");
  last_ = static_cast<uint64_t>(r.value);
  reserved_ = last_;
  in_flight_.clear();
  // Commits acknowledged under earlier leaders are below the fence, and
  // this leader does not know which: a snapshot waits until the watermark
  // reaches the fence (every commit from before that nodes still report
  // prepared is resolved). With 0 here a snapshot right after a leader
  // change read below an acknowledged commit (Jepsen append, kill every 2 s).
  finished_high_ = last_;
  reported_.clear();
  last_seen_ms_.clear();
  incarnations_.clear();
  oldest_reported_.clear();
  recent_reads_.clear();
  serving_since_ms_ = NowMs();
  leader_term_ = term;
  log::Info("cluster: timestamp service starts on the leader in term {} after {}", term, last_);
  (void)lock;
  return Status::OK();
}

uint64_t ClusterTimestamps::WatermarkLocked() {
  const uint64_t now = NowMs();
  const std::string self = node_->identity().id;
  // Commits of nodes not heard from for a while, or removed from the
  // membership (failure detection), no longer count: a dead node's commit
  // is applied nowhere unless its participants prepared it, and they report
  // it themselves until it is resolved (SliceService::PreparedTimestamps).
  const std::vector<std::string> ids = node_->MemberIds();
  const std::set<std::string> members(ids.begin(), ids.end());
  for (auto it = last_seen_ms_.begin(); it != last_seen_ms_.end();) {
    const bool removed = !members.empty() && members.count(it->first) == 0;
    if (it->first != self && (removed || it->second + options_.expire_ms < now)) {
      for (auto f = in_flight_.begin(); f != in_flight_.end();) {
        f = f->second == it->first ? in_flight_.erase(f) : std::next(f);
      }
      reported_.erase(it->first);
      oldest_reported_.erase(it->first);
      it = last_seen_ms_.erase(it);
    } else {
      ++it;
    }
  }
  uint64_t oldest = UINT64_MAX;
  if (!in_flight_.empty()) oldest = in_flight_.begin()->first;
  for (const auto& [node, set] : reported_) {
    if (!set.empty()) oldest = std::min(oldest, *set.begin());
  }
  return oldest == UINT64_MAX ? last_ : std::min(last_, oldest - 1);
}

uint64_t ClusterTimestamps::GcHorizonLocked() {
  const uint64_t now = NowMs();
  // A new leader has not heard every node's snapshots yet.
  if (now < serving_since_ms_ + options_.horizon_lag_ms) return 0;
  uint64_t h = WatermarkLocked();
  while (!recent_reads_.empty() && recent_reads_.front().first + options_.horizon_lag_ms < now) {
    recent_reads_.pop_front();
  }
  if (!recent_reads_.empty()) h = std::min(h, recent_reads_.front().second);
  for (const auto& [node, oldest] : oldest_reported_) h = std::min(h, oldest);
  return h;
}

void ClusterTimestamps::LearnGcHorizon(uint64_t h) {
  if (h != 0) gc_horizon_.store(h, std::memory_order_release);
}

Status ClusterTimestamps::LeaderServe(const std::string& node, uint64_t incarnation, uint32_t begin, const std::vector<uint64_t>& finished,
                                      const std::vector<uint64_t>& in_flight, bool read, uint64_t oldest_snapshot,
                                      std::vector<uint64_t>* begun, uint64_t* read_ts, uint64_t* gc_horizon,
                                      uint64_t* finished_high, uint64_t* last_handed_out) {
  std::unique_lock lock(leader_mu_);
  SHALE_RETURN_IF_ERROR(EnsureLeader(lock));
  if (node != node_->identity().id) {
    // A node removed after a failure (paused, cut off) may not know it yet
    // and still route by its old slice map, reading its own replicas that
    // stopped taking writes: without a timestamp it reads and commits
    // nothing until it has rejoined and caught up.
    const std::vector<std::string> ids = node_->MemberIds();
    if (!ids.empty() && std::find(ids.begin(), ids.end(), node) == ids.end()) {
      return NoTimestamps(fmt::format("node {} is not a member of the cluster (removed after a failure; it "
                                      "rejoins by itself)",
                                      node));
    }
  }
  if (incarnation != 0) {
    uint64_t& known = incarnations_[node];
    if (incarnation < known) {
      // A request the node's earlier process sent before it died.
      return NoTimestamps(fmt::format("the request comes from an earlier process of node {} (it restarted)", node));
    }
    if (incarnation > known) {
      // The node restarted: the commits its earlier process was handed
      // never finish. Those it prepared anywhere are reported by their
      // participants until resolved; the rest wrote nothing anywhere (or
      // applied on one node before the answer), so they no longer hold the
      // watermark.
      size_t dropped = 0;
      if (known != 0) {
        for (auto f = in_flight_.begin(); f != in_flight_.end();) {
          if (f->second == node) {
            f = in_flight_.erase(f);
            ++dropped;
          } else {
            ++f;
          }
        }
      }
      if (dropped > 0) {
        log::Info("cluster: node {} restarted; {} commit(s) in flight in its earlier process no longer hold the "
                  "read watermark",
                  node, dropped);
      }
      known = incarnation;
    }
  }
  last_seen_ms_[node] = NowMs();
  oldest_reported_[node] = oldest_snapshot;
  for (uint64_t ts : finished) {
    in_flight_.erase(ts);
    finished_high_ = std::max(finished_high_, ts);
    // A participant's report of the transaction as prepared may have been
    // processed just before (SliceService waits for its reports in flight,
    // ReportBarrier, before it answers Finish): finished is finished.
    for (auto& [id, reported] : reported_) reported.erase(ts);
  }
  {
    // The leader's own entry holds its prepared transactions (its own
    // commits are in in_flight_ already).
    std::set<uint64_t>& reported = reported_[node];
    reported = std::set<uint64_t>(in_flight.begin(), in_flight.end());
    for (uint64_t ts : finished) reported.erase(ts);
  }
  if (begin > 0) {
    if (last_ + begin > reserved_) {
      MetadataCommandPb mark;
      mark.set_timestamp_high_water(last_ + begin + options_.block);
      ApplyResult r = node_->ProposeMetadata(mark);
      if (!r.status.ok()) return r.status;
      if (static_cast<uint64_t>(r.value) != last_ + begin + options_.block || !node_->IsLeader()) {
        leader_term_ = 0;  // someone else fenced: no longer ours to hand out
        return NoTimestamps("the metadata leader changed");
      }
      reserved_ = static_cast<uint64_t>(r.value);
    }
    for (uint32_t i = 0; i < begin; ++i) {
      const uint64_t ts = ++last_;
      in_flight_[ts] = node;
      begun->push_back(ts);
    }
  }
  if (read) {
    // A new leader waits until every node had the chance to report the
    // commits it has in flight.
    while (NowMs() < serving_since_ms_ + options_.grace_ms && node_->MemberNames().size() > 1) {
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      lock.lock();
      if (leader_term_ == 0) return NoTimestamps("the metadata leader changed");
    }
    *read_ts = WatermarkLocked();
    // Sliding-window minimum of the read timestamps handed out.
    while (!recent_reads_.empty() && recent_reads_.back().second >= *read_ts) recent_reads_.pop_back();
    recent_reads_.emplace_back(NowMs(), *read_ts);
  }
  *gc_horizon = GcHorizonLocked();
  *finished_high = finished_high_;
  *last_handed_out = last_;
  return Status::OK();
}

grpc::Status ClusterTimestamps::Handle(const TimestampRequest& request, TimestampResponse* response) {
  profile::ModuleScope profile_scope(profile::Module::kTimestamps);
  std::vector<uint64_t> begun;
  uint64_t read_ts = 0;
  uint64_t gc_horizon = 0;
  uint64_t finished_high = 0;
  uint64_t last_handed_out = 0;
  std::vector<uint64_t> finished(request.finished().begin(), request.finished().end());
  std::vector<uint64_t> in_flight(request.in_flight().begin(), request.in_flight().end());
  // A node that does not report its snapshots holds the horizon at 0.
  const uint64_t oldest = request.reports_snapshot() ? request.oldest_snapshot() : 0;
  Status st = LeaderServe(request.node(), request.incarnation(), request.begin(), finished, in_flight, request.read(), oldest, &begun,
                          &read_ts, &gc_horizon, &finished_high, &last_handed_out);
  if (!st.ok()) return grpc::Status(grpc::StatusCode::UNAVAILABLE, st.message());
  for (uint64_t ts : begun) response->add_begun(ts);
  response->set_read(read_ts);
  response->set_gc_horizon(gc_horizon);
  response->set_leader_term(node_->term());
  response->set_commit_index(node_->commit_index());
  response->set_finished_high(finished_high);
  response->set_last_handed_out(last_handed_out);
  return grpc::Status::OK;
}

Result<uint64_t> ClusterTimestamps::BeginCommit() {
  Pending p;
  p.begin = 1;
  Call(&p);
  SHALE_RETURN_IF_ERROR(p.status);
  if (p.begun.size() != 1) return NoTimestamps("no timestamp was handed out");
  return p.begun[0];
}

void ClusterTimestamps::FinishCommit(uint64_t ts) {
  {
    std::lock_guard lock(mu_);
    mine_.erase(ts);
    finished_.push_back(ts);
  }
  // Reported before the client is answered, so a snapshot taken on any
  // node after the commit was acknowledged sees it: a failed batch puts
  // `ts` back into finished_, and the next one carries it. Tried until the
  // leader answered (a new leader knows nothing in flight from before its
  // term), at most expire_ms: past that the leader counts this node's
  // commits as gone anyway.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.expire_ms);
  for (int pause_ms = 1;; pause_ms = std::min(pause_ms * 2, 100)) {
    Pending p;
    Call(&p);
    if (p.status.ok()) return;
    if (std::chrono::steady_clock::now() >= give_up) {
      log::Warn("cluster: the finish of commit {} was not reported to the timestamp leader: {}", ts,
                p.status.ToString());
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
  }
}

uint64_t ClusterTimestamps::ReadTimestamp() {
  Pending p;
  p.read = true;
  Call(&p);
  std::lock_guard lock(mu_);
  if (!p.status.ok()) {
    // No leader to ask: the last watermark learned is an older but
    // consistent snapshot.
    log::Debug("cluster: read timestamp from cache ({}): {}", last_read_, p.status.ToString());
    return last_read_;
  }
  last_read_ = std::max(last_read_, p.read_ts);
  return p.read_ts;
}

Result<uint64_t> ClusterTimestamps::SnapshotTimestamp() {
  SHALE_ASSIGN_OR_RETURN(Pending p, AskLeader());
  // Every commit acknowledged before this call was reported finished before
  // the leader answered (FinishCommit reports before the client is
  // answered), so it is at or below finished_high.
  const uint64_t ts = AwaitWatermark(p.finished_high, p.read_ts);
  // Below an acknowledged commit a snapshot would read stale: the
  // statement fails (retryable) instead.
  if (ts < p.finished_high) {
    return NoTimestamps("the read watermark stayed below the newest acknowledged commit for the snapshot wait "
                        "(commits in flight or in doubt)");
  }
  return ts;
}

Status ClusterTimestamps::AwaitCommitsInFlight() {
  SHALE_ASSIGN_OR_RETURN(Pending p, AskLeader());
  if (AwaitWatermark(p.last_handed_out, p.read_ts) < p.last_handed_out) {
    return NoTimestamps("commits in flight did not finish within the snapshot wait (a transaction in doubt?)");
  }
  return Status::OK();
}

Result<ClusterTimestamps::Pending> ClusterTimestamps::AskLeader() {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.snapshot_wait_ms);
  Pending p;
  p.read = true;
  Call(&p);
  for (int pause_ms = 5; !p.status.ok(); pause_ms = std::min(pause_ms * 2, 200)) {
    // No leader answers (an election, this node cut off or removed). What
    // this node learned before may be below commits acknowledged since, so
    // it is never the answer: ask again until one answers.
    if (std::chrono::steady_clock::now() >= deadline) return p.status;
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
    p = Pending();
    p.read = true;
    Call(&p);
  }
  return p;
}

uint64_t ClusterTimestamps::AwaitWatermark(uint64_t target, uint64_t read_ts) {
  uint64_t ts = read_ts;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.snapshot_wait_ms);
  for (int pause_ms = 1; ts < target && std::chrono::steady_clock::now() < deadline;
       pause_ms = std::min(pause_ms * 2, 20)) {
    // Commits below `target` are still being applied: ask again (soon:
    // they usually finish within milliseconds; less often when they do not).
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
    Pending again;
    again.read = true;
    Call(&again);
    if (!again.status.ok()) break;
    ts = std::max(ts, again.read_ts);
  }
  if (ts < target) {
    stale_waits_.fetch_add(1, std::memory_order_relaxed);
    log::Warn("cluster: the read watermark {} stayed below {} for {} ms (commits in doubt or a silent node)", ts,
              target, options_.snapshot_wait_ms);
  }
  std::lock_guard lock(mu_);
  last_read_ = std::max(last_read_, ts);
  return ts;
}

uint64_t ClusterTimestamps::MetadataIndexSeen() {
  if (node_->IsLeader()) return node_->commit_index();
  return leader_commit_.load(std::memory_order_acquire);
}

Result<uint64_t> ClusterTimestamps::MetadataReadIndex() {
  if (node_->IsLeader()) return node_->commit_index();
  Pending p;
  p.read = true;
  Call(&p);
  if (!p.status.ok()) return p.status;
  // The batch that carried this request was sent after it was queued; its
  // answer (or a later one) set leader_commit_.
  return leader_commit_.load(std::memory_order_acquire);
}

void ClusterTimestamps::Call(Pending* p) {
  profile::ModuleScope profile_scope(profile::Module::kTimestamps);
  if (node_->IsLeader()) {
    // On the leader: no batching, no RPC.
    std::vector<uint64_t> finished;
    uint64_t report = 0;
    {
      std::lock_guard lock(mu_);
      finished.swap(finished_);
      report = ++report_gen_;
      reports_active_.insert(report);
    }
    uint64_t gc_horizon = 0;
    Status st = LeaderServe(node_->identity().id, incarnation_, p->begin, finished, PreparedInFlight(), p->read,
                            OwnOldestSnapshot(), &p->begun, &p->read_ts, &gc_horizon, &p->finished_high,
                            &p->last_handed_out);
    if (st.ok()) LearnGcHorizon(gc_horizon);
    std::lock_guard lock(mu_);
    reports_active_.erase(reports_active_.find(report));
    cv_.notify_all();
    if (!st.ok()) finished_.insert(finished_.end(), finished.begin(), finished.end());
    for (uint64_t ts : p->begun) mine_.insert(ts);
    p->status = st;
    p->done = true;
    return;
  }
  std::unique_lock lock(mu_);
  queue_.push_back(p);
  bool waited = false;
  while (!p->done) {
    if (sending_) {
      // Another caller's batch is on its way: a round trip this one waits
      // for (its own send is counted by the channel, rpc_stats.h).
      if (!waited) critical_path::CountRound();
      waited = true;
      cv_.wait(lock);
      continue;
    }
    // This caller sends the batch: everything queued, every finish.
    sending_ = true;
    std::vector<Pending*> batch;
    batch.swap(queue_);
    std::vector<uint64_t> finished;
    finished.swap(finished_);
    std::vector<uint64_t> in_flight(mine_.begin(), mine_.end());
    last_sent_ms_ = NowMs();
    const uint64_t report = ++report_gen_;
    reports_active_.insert(report);
    lock.unlock();
    for (uint64_t ts : PreparedInFlight()) in_flight.push_back(ts);
    uint32_t begin = 0;
    bool read = false;
    for (Pending* q : batch) {
      begin += q->begin;
      read = read || q->read;
    }
    std::vector<uint64_t> begun;
    uint64_t read_ts = 0;
    uint64_t gc_horizon = 0;
    uint64_t finished_high = 0;
    uint64_t last_handed_out = 0;
    Status st;
    if (node_->IsLeader()) {
      st = LeaderServe(node_->identity().id, incarnation_, begin, finished, in_flight, read, OwnOldestSnapshot(), &begun, &read_ts,
                       &gc_horizon, &finished_high, &last_handed_out);
    } else if (auto leader = node_->LeaderAddress(); !leader) {
      st = NoTimestamps("no metadata leader is known");
    } else {
      TimestampRequest request;
      request.set_node(node_->identity().id);
      request.set_incarnation(incarnation_);
      request.set_begin(begin);
      request.set_read(read);
      request.set_epoch(node_->epoch());
      for (uint64_t ts : finished) request.add_finished(ts);
      for (uint64_t ts : in_flight) request.add_in_flight(ts);
      request.set_oldest_snapshot(OwnOldestSnapshot());
      request.set_reports_snapshot(true);
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + kRpcDeadline);
      TimestampResponse response;
      std::shared_ptr<RaftService::Stub> stub;
      std::shared_ptr<PeerChannel> channel;
      {
        // One channel per leader, kept while it leads: its link when it has
        // one (peer_channel.h).
        std::lock_guard stub_lock(stub_mu_);
        if (stub_address_ != *leader || stub_ == nullptr) {
          stub_address_ = *leader;
          leader_channel_ = std::make_shared<PeerChannel>(*leader);
          stub_ = RaftService::NewStub(leader_channel_->channel());
        }
        stub = stub_;
        channel = leader_channel_;
      }
      grpc::Status rpc = channel->Call(LinkMethod::kTimestamps, stub.get(), &RaftService::Stub::Timestamps, &context,
                                       request, &response);
      if (!rpc.ok()) {
        st = NoTimestamps(fmt::format("leader {}: {}", *leader, rpc.error_message()));
      } else {
        begun.assign(response.begun().begin(), response.begun().end());
        read_ts = response.read();
        gc_horizon = response.gc_horizon();
        finished_high = response.finished_high();
        last_handed_out = response.last_handed_out();
        LearnLeaderCommit(response.commit_index());
      }
    }
    if (st.ok()) LearnGcHorizon(gc_horizon);
    lock.lock();
    reports_active_.erase(reports_active_.find(report));
    if (!st.ok()) {
      // Finishes are reported again with the next batch.
      finished_.insert(finished_.end(), finished.begin(), finished.end());
    }
    size_t next = 0;
    for (Pending* q : batch) {
      q->status = st;
      for (uint32_t i = 0; st.ok() && i < q->begin && next < begun.size(); ++i) {
        q->begun.push_back(begun[next]);
        mine_.insert(begun[next]);
        ++next;
      }
      q->read_ts = read_ts;
      q->finished_high = finished_high;
      q->last_handed_out = last_handed_out;
      q->done = true;
    }
    sending_ = false;
    cv_.notify_all();
  }
}

void ClusterTimestamps::RegisterLink(LinkServer* link) {
  ServeOnLink<TimestampRequest, TimestampResponse>(
      link, LinkMethod::kTimestamps,
      [this](const LinkCall&, const TimestampRequest* request, TimestampResponse* response) {
        return Handle(*request, response);
      });
}

void ClusterTimestamps::ReportBarrier() {
  std::unique_lock lock(mu_);
  const uint64_t upto = report_gen_;
  cv_.wait(lock, [&] { return stopping_ || reports_active_.empty() || *reports_active_.begin() > upto; });
}

void ClusterTimestamps::ReportLoop() {
  profile::SetThreadModule(profile::Module::kTimestamps);
  std::unique_lock lock(mu_);
  for (;;) {
    reporter_cv_.wait_for(lock, std::chrono::milliseconds(10));
    if (stopping_) return;
    // Also every snapshot_report_ms: this node's oldest snapshot for the
    // cluster's GC horizon (and the horizon back).
    const bool due = !finished_.empty() ||
                     (!mine_.empty() && NowMs() >= last_sent_ms_ + options_.report_interval_ms) ||
                     NowMs() >= last_sent_ms_ + options_.snapshot_report_ms;
    if (!due || sending_) continue;
    Pending p;  // no begin, no read: only reports
    lock.unlock();
    Call(&p);
    lock.lock();
  }
}

}  // namespace shale::cluster

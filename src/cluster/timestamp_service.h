// ClusterTimestamps: the cluster's commit and read timestamps
// (ARCHITECTURE.md, Transactions: "timestamps come from the cluster"), a
// txn::TimestampSource that shaled plugs into the node's TimestampOracle.
//
// The metadata leader hands timestamps out. Before it hands out any
// timestamp up to H it has committed "high-water mark H" through the Raft
// log (MetadataCommandPb.timestamp_high_water, in blocks), and a new leader
// first commits a fence — a mark above every mark applied so far — and
// starts after it. So no two leaders ever hand out the same timestamp and
// timestamps only grow, across leader changes and restarts.
//
// The read timestamp is the cluster's watermark: every commit at or below
// it is applied. The leader knows the commits in flight (it handed out their
// timestamps and hears when they finish), and every node reports its own
// in-flight commits with each request; the watermark is one below the oldest
// of them. After a leader change the new leader waits `grace` before it
// answers reads, so every node with a commit in flight has reported it
// (nodes with commits in flight report at least every report interval).
// Commits of a node not heard from for expire_ms no longer hold the
// watermark back (the node is dead; its commits are the data path's to
// resolve), nor do those handed out to a node's earlier process once its
// restarted process is heard from (every request names its process: the
// incarnation, which grows with each start); a request from an earlier
// process than one already heard is refused.
//
// On a follower the calls become one RPC (RaftService.Timestamps) to the
// leader; concurrent callers share one RPC (a batch: the first caller
// sends everything queued, the others wait for its answer). FinishCommit is
// reported at once (batched with whatever else is queued), so a snapshot
// taken anywhere after a commit is acknowledged includes it; the reporter
// thread re-sends reports that failed and reports long commits.
//
// Garbage collection across nodes: every request also carries the oldest
// snapshot the node's transactions read at, and every node reports at least
// every snapshot_report_ms. The leader answers with the cluster's GC
// horizon: the minimum of those reports, of the read timestamps it handed
// out within the last horizon_lag_ms (a snapshot taken but not yet
// reported) and of the watermark. A node's garbage collector never removes
// a version a snapshot at or above that horizon can see, so a snapshot
// taken on one node reads the same rows from replicas on any other.
//
// Thread-safety: all methods may be called concurrently.
#pragma once

#include <chrono>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "shale/status.h"
#include "src/cluster/raft.grpc.pb.h"
#include "src/cluster/peer_channel.h"
#include "src/cluster/raft.pb.h"
#include "src/txn/timestamp_oracle.h"

namespace grpc {
class Status;
}

namespace shale::cluster {

class ClusterNode;

struct TimestampServiceOptions {
  // Timestamps reserved per high-water-mark command. Default: 2^20.
  uint64_t block = 1u << 20;
  // A new leader answers reads only after this long. Default: 300 ms.
  uint64_t grace_ms = 300;
  // A node with commits in flight reports them this often. Default: 50 ms.
  uint64_t report_interval_ms = 50;
  // In-flight commits of a node silent this long stop holding the read
  // watermark back. Default: 5000 ms.
  uint64_t expire_ms = 5000;
  // Every node reports its oldest snapshot at least this often.
  // Default: 250 ms.
  uint64_t snapshot_report_ms = 250;
  // Read timestamps handed out within this long hold the GC horizon back
  // (until the node that took one has reported it). Default: 5000 ms.
  uint64_t horizon_lag_ms = 5000;
  // A new snapshot waits at most this long for the commits in flight below
  // the newest acknowledged commit (SnapshotTimestamp); then it fails with
  // the retryable 1047 (a snapshot at the watermark would miss acknowledged
  // commits). Longer than expire_ms, so a
  // silent node's commits stop holding the watermark before any snapshot
  // gives up on them (a snapshot that began as the node went silent would
  // otherwise race the expiry and fail); only commits in doubt or stuck
  // can make it give up. Default: 7000 ms.
  uint64_t snapshot_wait_ms = 7000;
};

class ClusterTimestamps final : public txn::TimestampSource {
 public:
  // `local` is the node's own oracle before the cluster took over: the
  // first leader starts above everything it handed out. REQUIRES: node and
  // local outlive this object.
  ClusterTimestamps(ClusterNode* node, const txn::TimestampOracle* local, TimestampServiceOptions options = {});
  ~ClusterTimestamps() override;  // stops the reporter

  Result<uint64_t> BeginCommit() override;
  void FinishCommit(uint64_t ts) override;
  uint64_t ReadTimestamp() override;
  // A read timestamp at or above every commit acknowledged before the call:
  // the leader answers the watermark W and the highest commit timestamp
  // reported finished F (every acknowledged commit is reported before its
  // client is answered); while W < F the commits in flight below F are
  // still being applied, and this asks again (polling, at most
  // snapshot_wait_ms) until W >= F. After that it fails with the retryable
  // 1047: a commit held in doubt makes snapshots fail, never read stale.
  // Without an answer from a leader it asks again for snapshot_wait_ms (an
  // election takes about a second), then fails with the retryable 1047:
  // the last watermark learned could be below a commit acknowledged since.
  Result<uint64_t> SnapshotTimestamp() override;
  // Asks the leader for the last timestamp it handed out L and polls the
  // watermark until it reaches L (at most snapshot_wait_ms, as
  // SnapshotTimestamp): every commit that had a timestamp before the call
  // is finished then.
  Status AwaitCommitsInFlight() override;
  uint64_t StaleWaits() const override { return stale_waits_.load(std::memory_order_relaxed); }
  uint64_t GcHorizon() override { return gc_horizon_.load(std::memory_order_acquire); }
  // A metadata read index: asks the leader (one round trip, batched with
  // the other timestamp requests) for its metadata commit index, answered
  // after this call began, so a node that has applied it has applied every
  // catalog change acknowledged before the call (a table another node just
  // created). Unavailable without a reachable leader.
  Result<uint64_t> MetadataReadIndex();
  // The highest metadata commit index the leader has answered with (on the
  // leader: its commit index), learned with every timestamp answer at no
  // extra cost: after SnapshotTimestamp or BeginCommit returns, a node that
  // has applied it routes by a slice map at least as new as every commit
  // acknowledged before the call used (TxnManager::SetRoutingChecks).
  uint64_t MetadataIndexSeen();
  // Returns once every report whose prepared set was taken before the call
  // has been answered by the leader (SliceService calls it after finishing
  // a prepared transaction, before it answers Finish: a stale "still
  // prepared" report cannot reach the leader after the coordinator's
  // FinishCommit).
  void ReportBarrier();
  // Where this node's oldest snapshot comes from (TxnManager::OldestSnapshot;
  // UINT64_MAX: none). REQUIRES: before the node serves.
  void SetSnapshotSource(std::function<uint64_t()> oldest) {
    std::lock_guard lock(source_mu_);
    oldest_snapshot_ = std::move(oldest);
  }
  // The commit timestamps of transactions prepared at this node (the data
  // path's participants, SliceService::PreparedTimestamps): reported as
  // commits in flight until they are applied or dropped, so the read
  // watermark stays below them even when their coordinator died.
  void SetPreparedSource(std::function<std::vector<uint64_t>()> prepared) {
    std::lock_guard lock(source_mu_);
    prepared_ = std::move(prepared);
  }

  // RaftService.Timestamps on the leader.
  grpc::Status Handle(const TimestampRequest& request, TimestampResponse* response);
  // Serves Handle on the node's link too (node_link.h), which followers use
  // when the leader has one. REQUIRES: before the link starts; this object
  // outlives it.
  void RegisterLink(LinkServer* link);

 private:
  struct Pending;
  // The leader's side. REQUIRES: leader_mu_ not held.
  Status LeaderServe(const std::string& node, uint64_t incarnation, uint32_t begin, const std::vector<uint64_t>& finished,
                     const std::vector<uint64_t>& in_flight, bool read, uint64_t oldest_snapshot,
                     std::vector<uint64_t>* begun, uint64_t* read_ts, uint64_t* gc_horizon,
                     uint64_t* finished_high, uint64_t* last_handed_out);
  // One read answer from the leader, asked again for up to snapshot_wait_ms
  // while none answers; then its error (the retryable 1047).
  Result<Pending> AskLeader();
  // Polls the watermark (first answer `read_ts`) until it reaches `target`
  // or snapshot_wait_ms passed; returns the last watermark learned.
  uint64_t AwaitWatermark(uint64_t target, uint64_t read_ts);
  Status EnsureLeader(std::unique_lock<std::mutex>& lock);  // REQUIRES: leader_mu_ held
  uint64_t WatermarkLocked();                                // REQUIRES: leader_mu_ held
  uint64_t GcHorizonLocked();                                // REQUIRES: leader_mu_ held
  std::vector<uint64_t> PreparedInFlight() {
    std::lock_guard lock(source_mu_);
    return prepared_ ? prepared_() : std::vector<uint64_t>{};
  }
  // 0 until the snapshot source is set (holds every node's GC back).
  uint64_t OwnOldestSnapshot() {
    std::lock_guard lock(source_mu_);
    return oldest_snapshot_ ? oldest_snapshot_() : 0;
  }
  void LearnGcHorizon(uint64_t h);
  void LearnLeaderCommit(uint64_t index) {
    uint64_t seen = leader_commit_.load(std::memory_order_acquire);
    while (seen < index && !leader_commit_.compare_exchange_weak(seen, index, std::memory_order_acq_rel)) {
    }
  }
  std::atomic<uint64_t> leader_commit_{0};  // the highest leader commit index answered
  // A follower's side: queue `p`, send or wait for the batch holding it.
  void Call(Pending* p);
  void ReportLoop();
  uint64_t NowMs() const;

  ClusterNode* const node_;
  const txn::TimestampOracle* const local_;
  const TimestampServiceOptions options_;
  // This process among the node's starts: the wall-clock start time in ms,
  // shifted, with random low bits (two starts in one ms differ).
  const uint64_t incarnation_;

  // Leader state, valid for leader_term_.
  std::mutex leader_mu_;
  uint64_t leader_term_ = 0;   // GUARDED_BY(leader_mu_); 0: not serving
  uint64_t last_ = 0;          // GUARDED_BY(leader_mu_): last handed out
  uint64_t reserved_ = 0;      // GUARDED_BY(leader_mu_): committed high-water mark
  uint64_t serving_since_ms_ = 0;                  // GUARDED_BY(leader_mu_)
  uint64_t finished_high_ = 0;  // GUARDED_BY(leader_mu_): highest commit timestamp reported finished
  std::map<uint64_t, std::string> in_flight_;      // GUARDED_BY(leader_mu_): ts -> node id
  std::map<std::string, std::set<uint64_t>> reported_;  // GUARDED_BY(leader_mu_)
  std::map<std::string, uint64_t> last_seen_ms_;   // GUARDED_BY(leader_mu_)
  std::map<std::string, uint64_t> incarnations_;   // GUARDED_BY(leader_mu_): node -> newest process heard
  std::map<std::string, uint64_t> oldest_reported_;  // GUARDED_BY(leader_mu_): node -> oldest snapshot
  // Read timestamps handed out within horizon_lag_ms, as (ms, ts), kept as
  // a sliding-window minimum (ts increasing from the front).
  std::deque<std::pair<uint64_t, uint64_t>> recent_reads_;  // GUARDED_BY(leader_mu_)

  // This node's commits in flight and what is to be reported.
  std::mutex mu_;
  // Batch senders and ReportBarrier wait on cv_; the reporter waits on
  // reporter_cv_ (woken only to stop: it polls), so a statement's
  // timestamp request never wakes the reporter thread.
  std::condition_variable cv_;
  std::condition_variable reporter_cv_;
  std::set<uint64_t> mine_;               // GUARDED_BY(mu_)
  std::vector<uint64_t> finished_;        // GUARDED_BY(mu_): not yet sent
  std::vector<Pending*> queue_;           // GUARDED_BY(mu_)
  bool sending_ = false;                  // GUARDED_BY(mu_)
  uint64_t last_read_ = 0;                // GUARDED_BY(mu_): the last watermark learned
  uint64_t last_sent_ms_ = 0;             // GUARDED_BY(mu_)
  bool stopping_ = false;                 // GUARDED_BY(mu_)
  uint64_t report_gen_ = 0;               // GUARDED_BY(mu_): reports started
  std::multiset<uint64_t> reports_active_;  // GUARDED_BY(mu_): reports not answered yet
  std::mutex stub_mu_;
  std::string stub_address_;                         // GUARDED_BY(stub_mu_)
  std::shared_ptr<PeerChannel> leader_channel_;      // GUARDED_BY(stub_mu_)
  std::shared_ptr<RaftService::Stub> stub_;          // GUARDED_BY(stub_mu_), on leader_channel_
  std::mutex source_mu_;
  std::function<uint64_t()> oldest_snapshot_;  // GUARDED_BY(source_mu_)
  std::function<std::vector<uint64_t>()> prepared_;  // GUARDED_BY(source_mu_)
  std::atomic<uint64_t> gc_horizon_{0};        // the last horizon learned
  std::atomic<uint64_t> stale_waits_{0};       // AwaitWatermark gave up
  std::thread reporter_;
};

}  // namespace shale::cluster

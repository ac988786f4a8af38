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
// resolve).
//
// On a follower the calls become one RPC (RaftService.Timestamps) to the
// leader; concurrent callers share one RPC (a batch: the first caller
// sends everything queued, the others wait for its answer). FinishCommit is
// reported at once (batched with whatever else is queued), so a snapshot
// taken anywhere after a commit is acknowledged includes it; the reporter
// thread re-sends reports that failed and reports long commits.
//
// Thread-safety: all methods may be called concurrently.
#pragma once

#include <chrono>
#include <condition_variable>
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

  // RaftService.Timestamps on the leader.
  grpc::Status Handle(const TimestampRequest& request, TimestampResponse* response);

 private:
  struct Pending;
  // The leader's side. REQUIRES: leader_mu_ not held.
  Status LeaderServe(const std::string& node, uint32_t begin, const std::vector<uint64_t>& finished,
                     const std::vector<uint64_t>& in_flight, bool read, std::vector<uint64_t>* begun,
                     uint64_t* read_ts);
  Status EnsureLeader(std::unique_lock<std::mutex>& lock);  // REQUIRES: leader_mu_ held
  uint64_t WatermarkLocked();                                // REQUIRES: leader_mu_ held
  // A follower's side: queue `p`, send or wait for the batch holding it.
  void Call(Pending* p);
  void ReportLoop();
  uint64_t NowMs() const;

  ClusterNode* const node_;
  const txn::TimestampOracle* const local_;
  const TimestampServiceOptions options_;

  // Leader state, valid for leader_term_.
  std::mutex leader_mu_;
  uint64_t leader_term_ = 0;   // GUARDED_BY(leader_mu_); 0: not serving
  uint64_t last_ = 0;          // GUARDED_BY(leader_mu_): last handed out
  uint64_t reserved_ = 0;      // GUARDED_BY(leader_mu_): committed high-water mark
  uint64_t serving_since_ms_ = 0;                  // GUARDED_BY(leader_mu_)
  std::map<uint64_t, std::string> in_flight_;      // GUARDED_BY(leader_mu_): ts -> node id
  std::map<std::string, std::set<uint64_t>> reported_;  // GUARDED_BY(leader_mu_)
  std::map<std::string, uint64_t> last_seen_ms_;   // GUARDED_BY(leader_mu_)

  // This node's commits in flight and what is to be reported.
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<uint64_t> mine_;               // GUARDED_BY(mu_)
  std::vector<uint64_t> finished_;        // GUARDED_BY(mu_): not yet sent
  std::vector<Pending*> queue_;           // GUARDED_BY(mu_)
  bool sending_ = false;                  // GUARDED_BY(mu_)
  uint64_t last_read_ = 0;                // GUARDED_BY(mu_): the last watermark learned
  uint64_t last_sent_ms_ = 0;             // GUARDED_BY(mu_)
  bool stopping_ = false;                 // GUARDED_BY(mu_)
  std::mutex stub_mu_;
  std::string stub_address_;                         // GUARDED_BY(stub_mu_)
  std::shared_ptr<RaftService::Stub> stub_;          // GUARDED_BY(stub_mu_)
  std::thread reporter_;
};

}  // namespace shale::cluster

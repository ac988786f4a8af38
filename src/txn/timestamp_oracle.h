// TimestampOracle: the node-local source of commit and read timestamps.
//
// Commit timestamps are handed out in strictly increasing order and never
// twice, also across restarts: the oracle persists a high-water mark in the
// node's MetaStore (synced RocksDB write) before it hands out any timestamp
// up to it, in blocks, and starts after the stored mark.
//
// A read timestamp is a *watermark*: every commit with a timestamp at or
// below it has been applied to the slices. A commit is in flight between
// BeginCommit and FinishCommit; the watermark stays below the oldest one in
// flight, so a snapshot never sees a commit half applied and never misses
// one that a later snapshot sees below the same timestamp.
//
// In a cluster the timestamps must be the cluster's, so snapshots are
// consistent across nodes: shaled sets a TimestampSource (the cluster
// timestamp service, src/cluster/timestamp_service.h, which asks the
// metadata leader) and from then on BeginCommit, FinishCommit and
// ReadTimestamp go to it, with the same meaning. Without a source (unit
// tests, tools) the oracle is the node-local one described above.
//
// Thread-safety: all methods may be called concurrently.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>

#include "shale/status.h"
#include "storage/meta_store.h"

namespace shale::txn {

// A source of commit and read timestamps with TimestampOracle's semantics
// (above). Implemented by the cluster timestamp service.
class TimestampSource {
 public:
  virtual ~TimestampSource() = default;
  virtual Result<uint64_t> BeginCommit() = 0;
  virtual void FinishCommit(uint64_t ts) = 0;
  virtual uint64_t ReadTimestamp() = 0;
  // The snapshot of a new transaction or statement: a read timestamp at or
  // above every commit acknowledged before the call (external
  // consistency: a client that saw its commit acknowledged through one
  // node sees it through any other). Default: ReadTimestamp.
  // Unavailable (the retryable 1047) when it cannot be had: a snapshot
  // below an acknowledged commit would read stale.
  virtual Result<uint64_t> SnapshotTimestamp() { return ReadTimestamp(); }
  // Returns once every commit that had a timestamp when it was called has
  // finished, so a snapshot taken afterwards, through any node, sees every
  // version a newest-version read (a locking read, the row read of an
  // UPDATE) may have returned before the call. A commit's versions are
  // applied at a replica before the commit is finished (one phase's
  // applier, 2PC's participants), and such a read sees them: a transaction
  // that read one and commits no write must not be acknowledged before it
  // finished (docs/transactions.md "Newest-version reads and
  // acknowledgements").
  // Unavailable (1047) when no leader answers within the snapshot wait.
  [[nodiscard]] virtual Status AwaitCommitsInFlight() = 0;
  // How many of those waits (and SnapshotTimestamp's) gave up.
  virtual uint64_t StaleWaits() const { return 0; }
  // Cluster-wide garbage-collection bound: no node reads at a snapshot
  // below it (docs/transactions.md "Garbage collection across nodes").
  // 0 when not known yet.
  virtual uint64_t GcHorizon() { return UINT64_MAX; }
};

class TimestampOracle {
 public:
  // Reads the stored high-water mark (0 if none) and reserves the first
  // block. `block`: timestamps reserved per MetaStore write. Default 2^20.
  static Result<std::unique_ptr<TimestampOracle>> Open(storage::MetaStore* meta, uint64_t block = 1u << 20);

  // A new commit timestamp, larger than every one handed out before (also
  // before a restart). It stays in flight until FinishCommit(ts).
  Result<uint64_t> BeginCommit();
  void FinishCommit(uint64_t ts);
  // Every commit at or below this timestamp is applied (and none above it
  // that is not yet applied is at or below it).
  uint64_t ReadTimestamp() const;
  // A transaction's snapshot: with a source, its SnapshotTimestamp (at or
  // above every acknowledged commit); else ReadTimestamp.
  Result<uint64_t> SnapshotTimestamp() const;
  // See TimestampSource::AwaitCommitsInFlight. Without a source: until
  // ReadTimestamp reaches the last timestamp handed out at the call.
  [[nodiscard]] Status AwaitCommitsInFlight() const;
  uint64_t StaleWaits() const {
    TimestampSource* source = source_.load(std::memory_order_acquire);
    return source != nullptr ? source->StaleWaits() : 0;
  }
  // No snapshot anywhere in the cluster reads below this (the source's
  // GcHorizon); UINT64_MAX without a source (only this node's snapshots
  // matter then).
  uint64_t GcHorizon() const {
    TimestampSource* source = source_.load(std::memory_order_acquire);
    return source != nullptr ? source->GcHorizon() : UINT64_MAX;
  }
  // The last timestamp handed out by the local oracle (with a source: the
  // last before the source was set).
  uint64_t last() const;

  // From now on BeginCommit/FinishCommit/ReadTimestamp go to `source`.
  // REQUIRES: source outlives the oracle's use; no commit in flight.
  void SetSource(TimestampSource* source) { source_.store(source, std::memory_order_release); }
  bool has_source() const { return source_.load(std::memory_order_acquire) != nullptr; }

 private:
  TimestampOracle(storage::MetaStore* meta, uint64_t block) : meta_(meta), block_(block) {}
  Status Reserve(uint64_t up_to);

  storage::MetaStore* const meta_;
  const uint64_t block_;
  mutable std::mutex mu_;
  uint64_t last_ = 0;       // GUARDED_BY(mu_)
  uint64_t reserved_ = 0;   // GUARDED_BY(mu_): persisted high-water mark
  std::set<uint64_t> in_flight_;  // GUARDED_BY(mu_)
  std::atomic<TimestampSource*> source_{nullptr};
};

}  // namespace shale::txn

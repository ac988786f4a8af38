// What a statement waits for, counted: the RPC round trips and the synced
// writes on its critical path, and the node's totals of synced writes
// (docs/cluster.md "Counters of the data path", SHOW STATUS Shale_*).
//
// A commit or a read in a cluster spends its time waiting, not computing
// (docs/benchmarks.md, the three-node profiles): for a round trip to another
// node, for an fsync. These counters say how many of each it waited for.
//
//  - The critical path of a thread (PathCounts): every round trip it waited
//    for (a client RPC made on this thread; a fan-out to several nodes at
//    once counts as the deepest of its branches, see Branch and Deepest),
//    and every synced write it waited for here (a WAL sync or a synced
//    MetaStore write, its own or one a group commit shared with it). A
//    synced write at another node is inside that node's round trip and is
//    counted there, in its totals. The session reads the difference before
//    and after a statement (src/exec/session.cc) and Transaction::Commit
//    before and after a commit with writes (src/txn/transaction.cc).
//  - Node totals (NodeTotals): fdatasync calls of the WAL, synced
//    MetaStore writes (RocksDB write groups can share one sync; a write is
//    counted once either way), and their sum over the nodes divided by the
//    commits is the synced writes per commit.
//
// Thread-safety: PathCounts is per thread (This()); NodeTotals' fields are
// atomics, any thread.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace shale::critical_path {

struct PathCounts {
  uint64_t rounds = 0;         // RPC round trips waited for, one after another
  uint64_t synced_writes = 0;  // synced writes waited for on this node

  PathCounts operator-(const PathCounts& o) const { return {rounds - o.rounds, synced_writes - o.synced_writes}; }
  PathCounts& operator+=(const PathCounts& o) {
    rounds += o.rounds;
    synced_writes += o.synced_writes;
    return *this;
  }
};

// The calling thread's counts since it started.
PathCounts& This();

inline void CountRound() { ++This().rounds; }
inline void CountSyncedWrite() { ++This().synced_writes; }

// A fan-out: each branch runs on a thread of its own (or on this one), the
// caller waits for all of them, so the path grows by the deepest branch.
// A branch counts from a Branch made on its thread to End(); the caller
// adds the Deepest of the branches (src/txn/fan_out.cc).
class Branch {
 public:
  Branch() : start_(This()) {}
  PathCounts End() const { return This() - start_; }

 private:
  PathCounts start_;
};
inline PathCounts Deepest(const PathCounts& a, const PathCounts& b) {
  return {std::max(a.rounds, b.rounds), std::max(a.synced_writes, b.synced_writes)};
}

struct NodeTotals {
  std::atomic<uint64_t> wal_syncs{0};                // fdatasync of the slice store's WAL
  std::atomic<uint64_t> metastore_synced_writes{0};  // MetaStore writes with sync, and SyncUnsynced's syncs
};
NodeTotals& Node();

}  // namespace shale::critical_path

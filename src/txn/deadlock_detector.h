// DeadlockDetector: finds cycles of row-lock waits that span nodes and ends
// one victim's wait with ER_LOCK_DEADLOCK 1213 (docs/transactions.md
// "Deadlocks across nodes").
//
// A node's LockManager sees only its own locks: a transaction A waiting at
// node 2 for B, while B waits at node 3 for A, is a cycle no node sees. One
// node (in shaled the metadata leader) runs this detector. Every round
// (interval_ms) it asks every member for the waits of the transactions it
// coordinates (DataRouter::LockWaits: the coordinator knows exactly while
// each wait lasts, also between the 250 ms slices of a remote lock request),
// then asks each node where someone waits for the holders of those locks
// (DataRouter::LockHolders). An edge "W waits for H" is W's wait and a holder
// H of that lock in a conflicting mode. The graph it searches holds only
// the edges seen in this round AND the previous one (same wait id, same
// holder), then it picks, in every cycle, the youngest transaction (latest
// start on its coordinator's clock; ties by name) and asks its coordinator to
// end that wait (DataRouter::AbortLockWait); the session rolls the victim's
// whole transaction back, releasing its locks everywhere.
//
// Invariants:
//  1. No false deadlock: an edge seen in two rounds was there the whole time
//     between them (a wait id names one uninterrupted wait; a lock is held
//     from its grant to the end of its transaction and never taken again
//     after a lease ended it). So every cycle it acts on existed, all at
//     once, at the start of the later round: a real deadlock, which nothing
//     but a timeout, a KILL or a victim ends.
//  2. A victim is chosen only among the cycle's transactions, and a wait is
//     aborted only if that very wait (its id) is still in progress.
//  3. A cycle is broken within about 2 * interval_ms of forming, plus the
//     RPCs, plus at most 250 ms for a victim waiting at another node (its
//     current lock request returns first).
//
// Thread-safety: Start/Stop from one thread; RunRound is called by the
// detector's thread (or by tests, with the thread not started).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "src/txn/data_router.h"

namespace shale::txn {

struct DeadlockDetectorOptions {
  // The nodes whose transactions to collect (every cluster member). Required.
  std::function<std::vector<std::string>()> members;
  // Whether this node runs the detector now (shaled: it is the metadata
  // leader with a quorum). Unset: always.
  std::function<bool()> active;
  // Time between rounds. Default: 250.
  uint32_t interval_ms = 250;
};

// One edge of the global wait-for graph: `waiter`'s wait `wait` for a lock
// that `holder` holds in a conflicting mode.
struct WaitEdge {
  LockWaitInfo wait;
  TxnKey holder;
  // Identity across rounds: the same wait of the same transaction for the
  // same holder.
  std::tuple<std::string, std::string, uint64_t, std::string, std::string> Identity() const {
    return {wait.txn.ToString(), wait.node, wait.wait_id, wait.name, holder.ToString()};
  }
};

// The waits to abort so that `edges` hold no cycle: in each cycle the
// youngest waiting transaction (largest txn_started_us, then the larger
// TxnKey string), removed before the next cycle is looked for.
std::vector<LockWaitInfo> ChooseDeadlockVictims(const std::vector<WaitEdge>& edges);

class DeadlockDetector {
 public:
  DeadlockDetector(DataRouter* router, DeadlockDetectorOptions options);
  ~DeadlockDetector();  // stops the thread
  DeadlockDetector(const DeadlockDetector&) = delete;
  DeadlockDetector& operator=(const DeadlockDetector&) = delete;

  void Start();
  void Stop();

  // One round: collect the edges, act on the cycles among those seen in
  // the previous round too. Returns the number of waits aborted. A node
  // that does not answer is left out of this round (and so its edges are
  // not confirmed by the next one).
  size_t RunRound();

  uint64_t victims() const { return victims_; }  // waits aborted since start

 private:
  std::vector<WaitEdge> Collect();
  void Loop();

  DataRouter* const router_;
  const DeadlockDetectorOptions options_;
  // Edge identities of the previous round (RunRound's thread only).
  std::set<std::tuple<std::string, std::string, uint64_t, std::string, std::string>> previous_;
  std::atomic<uint64_t> victims_{0};

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // GUARDED_BY(mu_)
  std::thread thread_;
};

}  // namespace shale::txn

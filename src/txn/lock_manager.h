// LockManager: row locks of the node's transactions, held until commit or
// rollback (strict two-phase locking for writers; readers use MVCC
// snapshots and take no lock unless they ask: SELECT ... FOR UPDATE / FOR
// SHARE).
//
// A lock is named by an opaque byte string (the executor uses the table id
// and the encoded primary key, or a unique index's id and key values). Modes
// are shared (S) and exclusive (X); a holder of S may upgrade to X when it is
// the only holder.
//
// Waiting: Lock() blocks until the lock is granted, the timeout passes
// (ER_LOCK_WAIT_TIMEOUT 1205), *interrupt becomes true (KILL QUERY:
// ER_QUERY_INTERRUPTED 1317), or waiting would close a cycle in the
// wait-for graph (ER_LOCK_DEADLOCK 1213). The graph is checked by the waiter
// whenever it starts or resumes waiting, so the transaction whose wait closes
// a cycle is the one that fails: a deadlock is reported within one check
// interval (kCheckInterval) of forming.
//
// Cycles through other nodes (a transaction waiting here for a lock held by
// a transaction that waits at another node) are not visible here; the
// cluster's detector (src/txn/deadlock_detector.h) collects this node's
// waits (Waiters) and lock holders (Holders) and ends a victim's wait with
// AbortWait (1213).
//
// Invariants:
//  1. A lock is held in X by at most one transaction, and never in X and S
//     by different transactions at once.
//  2. Locks are released only by ReleaseAll (commit, rollback, disconnect).
//  3. The table is keyed by a 64-bit hash of the name (no name is copied
//     into it): two names with one hash are one lock. That can only make a
//     transaction wait for a lock it did not need (about one pair in 10^7
//     among a million locks held at once), never let two transactions hold
//     one name; each transaction keeps the names it took, for
//     ExclusiveLocksOf (which lists the first of two such names a
//     transaction took: taking it again after a restart takes both).
//
// Thread-safety: all methods may be called concurrently; one transaction
// calls Lock from one thread at a time.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>
#include <unordered_map>
#include <utility>

#include "shale/status.h"
#include "src/common/huge_page_allocator.h"
#include "src/common/packed_strings.h"

namespace shale::txn {

enum class LockMode : uint8_t { kShared = 1, kExclusive = 2 };

// Whether a holder in mode `held` blocks a request for mode `wanted`.
inline bool LockModesConflict(LockMode wanted, LockMode held) {
  return wanted == LockMode::kExclusive || held == LockMode::kExclusive;
}

// One transaction's wait, as the cluster's deadlock detector sees it.
struct LockWaiter {
  uint64_t txn = 0;            // LockManager transaction id
  uint64_t wait_id = 0;        // this wait (one Lock call), unique in this LockManager
  int64_t txn_started_us = 0;  // as passed to Lock
  std::string name;
  LockMode mode = LockMode::kShared;
};

class LockManager {
 public:
  static constexpr std::chrono::milliseconds kCheckInterval{20};

  // Acquires (or upgrades to) `mode` on `name` for transaction `txn`.
  // `txn_started_us` (the transaction's start, microseconds since the
  // epoch) marks a wait of one of this node's own transactions, reported by
  // Waiters(); 0: a slice of a remote transaction's wait, which its
  // coordinator reports. `*acquired` (when given) is set to whether this
  // call took the lock or upgraded it (false: `txn` held it already in
  // `mode` or stronger).
  Status Lock(uint64_t txn, std::string_view name, LockMode mode, std::chrono::milliseconds timeout,
              const std::atomic<bool>* interrupt, int64_t txn_started_us = 0, bool* acquired = nullptr);
  // Releases every lock `txn` holds and wakes waiters.
  void ReleaseAll(uint64_t txn);
  // Whether `txn` holds `name` in `mode` (or stronger).
  bool Holds(uint64_t txn, const std::string& name, LockMode mode) const;
  // The names of the locks `txn` holds in X mode (what a prepared
  // transaction records, to take them again after a restart).
  std::vector<std::string> ExclusiveLocksOf(uint64_t txn) const;

  // The waits in progress that were begun with a txn_started_us.
  std::vector<LockWaiter> Waiters() const;
  // The transactions holding `name`, with their modes.
  std::vector<std::pair<uint64_t, LockMode>> Holders(const std::string& name) const;
  // Ends wait `wait_id` of `txn` with ER_LOCK_DEADLOCK 1213 (the cluster's
  // detector chose it as a victim). False when that wait is no longer in
  // progress (granted, or ended otherwise): nothing happens.
  bool AbortWait(uint64_t txn, uint64_t wait_id);

  // Statistics: SHOW STATUS Innodb_row_lock_waits, Shale_deadlocks, ...
  uint64_t waits() const { return waits_.load(); }
  uint64_t timeouts() const { return timeouts_.load(); }
  uint64_t deadlocks() const { return deadlocks_.load(); }
  size_t locks_held() const;

 private:
  // The holders of one lock. Almost every lock has one holder, kept inline
  // (no allocation); further shared holders go to `more`.
  struct LockState {
    bool has_first = false;
    LockMode first_mode = LockMode::kShared;
    uint64_t first_txn = 0;
    std::unique_ptr<std::vector<std::pair<uint64_t, LockMode>>> more;  // null: none

    bool empty() const { return !has_first && more == nullptr; }
    // The mode `txn` holds, or null.
    const LockMode* Find(uint64_t txn) const;
    void Set(uint64_t txn, LockMode mode);
    void Erase(uint64_t txn);
    template <typename F>
    void ForEach(F&& f) const {
      if (has_first) f(first_txn, first_mode);
      if (more != nullptr) {
        for (const auto& [t, m] : *more) f(t, m);
      }
    }
  };
  // The locks by NameHash (invariant 3, never 0): open addressing with
  // linear probing in one array, so taking a lock costs one or two cache
  // lines and no allocation (a million row locks of one statement are a
  // million probes, not a million nodes). Pointers it returns are valid
  // until the next FindOrInsert or Erase.
  class LockTable {
   public:
    LockState* Find(uint64_t hash);
    const LockState* Find(uint64_t hash) const;
    // The lock's state, added (without holders) when missing.
    LockState* FindOrInsert(uint64_t hash);
    void Erase(uint64_t hash);
    // Takes `txn` out of every lock's holders and drops the locks left
    // with none: one pass over the table, for a transaction that holds a
    // large share of it.
    void EraseHolder(uint64_t txn);
    size_t size() const { return size_; }

   private:
    struct Slot {
      uint64_t hash = 0;  // 0: empty
      LockState state;
    };
    using Slots = std::vector<Slot, HugePageAllocator<Slot>>;
    size_t SlotOf(uint64_t hash) const;  // its slot, or the empty one ending its probe
    void Resize(size_t capacity);
    // Into fresh slots of at least `capacity`, the entries of `old` that
    // have holders.
    void Rebuild(Slots old, size_t capacity);
    Slots slots_;  // a power of two long, at most half full (or empty)
    size_t size_ = 0;
  };
  static constexpr size_t kMinSlots = 1024;
  static uint64_t NameHash(std::string_view name) {
    const uint64_t h = std::hash<std::string_view>{}(name);
    return h == 0 ? 1 : h;
  }
  bool Grantable(const LockState& s, uint64_t txn, LockMode mode) const;
  // Whether a wait of `txn` closes a cycle. REQUIRES: mu_ held.
  bool ClosesCycle(uint64_t txn) const;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  LockTable locks_;  // GUARDED_BY(mu_)
  // Each transaction's locks, once each, in the order taken: their hashes
  // and names (hashes[i] is names[i]'s).
  struct Held {
    std::vector<uint64_t> hashes;
    PackedStrings names;
  };
  std::unordered_map<uint64_t, Held> held_;  // GUARDED_BY(mu_)
  struct Wait {
    std::string name;
    uint64_t hash = 0;
    LockMode mode = LockMode::kShared;
    uint64_t id = 0;
    int64_t txn_started_us = 0;
    bool victim = false;  // AbortWait: end with 1213
  };
  std::unordered_map<uint64_t, Wait> waiting_;  // GUARDED_BY(mu_)
  uint64_t next_wait_id_ = 1;                   // GUARDED_BY(mu_)
  std::atomic<uint64_t> waits_{0}, timeouts_{0}, deadlocks_{0};
};

}  // namespace shale::txn

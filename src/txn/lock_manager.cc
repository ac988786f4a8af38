#include "src/txn/lock_manager.h"

#include <algorithm>
#include <vector>

#include "src/common/errors.h"
#include "src/common/module_profile.h"

namespace shale::txn {

bool LockManager::Grantable(const LockState& s, uint64_t txn, LockMode mode) const {
  for (const auto& [holder, held] : s.holders) {
    if (holder == txn) continue;
    if (mode == LockMode::kExclusive || held == LockMode::kExclusive) return false;
  }
  return true;
}

bool LockManager::ClosesCycle(uint64_t start) const {
  // Depth-first over "waits for": a waiter waits for every holder of its
  // lock whose mode conflicts with the one it asks for.
  std::vector<uint64_t> stack = {start};
  std::set<uint64_t> seen;
  while (!stack.empty()) {
    uint64_t t = stack.back();
    stack.pop_back();
    auto w = waiting_.find(t);
    if (w == waiting_.end()) continue;
    auto l = locks_.find(w->second.name);
    if (l == locks_.end()) continue;
    for (const auto& [holder, held] : l->second.holders) {
      if (holder == t) continue;
      if (!LockModesConflict(w->second.mode, held)) continue;
      if (holder == start) return true;
      if (seen.insert(holder).second) stack.push_back(holder);
    }
  }
  return false;
}

Status LockManager::Lock(uint64_t txn, const std::string& name, LockMode mode, std::chrono::milliseconds timeout,
                         const std::atomic<bool>* interrupt, int64_t txn_started_us) {
  profile::ModuleScope profile_scope(profile::Module::kLocks);
  std::unique_lock<std::mutex> l(mu_);
  LockState& state = locks_[name];
  auto mine = state.holders.find(txn);
  if (mine != state.holders.end() && (mine->second == LockMode::kExclusive || mode == LockMode::kShared)) {
    return Status::OK();  // already held strongly enough
  }
  if (!Grantable(state, txn, mode)) {
    waits_.fetch_add(1, std::memory_order_relaxed);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    waiting_[txn] = Wait{name, mode, next_wait_id_++, txn_started_us, false};
    while (true) {
      Status failure;
      if (waiting_[txn].victim) {
        // The cluster's detector found this wait in a cycle through other
        // nodes (the local graph cannot see it).
        deadlocks_.fetch_add(1, std::memory_order_relaxed);
        failure =
            SqlError(ErrorCode::kLockDeadlock, "Deadlock found when trying to get lock; try restarting transaction");
      } else if (ClosesCycle(txn)) {
        deadlocks_.fetch_add(1, std::memory_order_relaxed);
        failure = SqlError(ErrorCode::kLockDeadlock, "Deadlock found when trying to get lock; try restarting transaction");
      } else if (interrupt != nullptr && interrupt->load(std::memory_order_relaxed)) {
        failure = SqlError(ErrorCode::kQueryInterrupted, "Query execution was interrupted");
      } else if (std::chrono::steady_clock::now() >= deadline) {
        timeouts_.fetch_add(1, std::memory_order_relaxed);
        failure = SqlError(ErrorCode::kLockWaitTimeout, "Lock wait timeout exceeded; try restarting transaction");
      }
      if (!failure.ok()) {
        waiting_.erase(txn);
        auto it = locks_.find(name);
        if (it != locks_.end() && it->second.holders.empty()) locks_.erase(it);
        return failure;
      }
      auto now = std::chrono::steady_clock::now();
      auto wait = std::min<std::chrono::steady_clock::duration>(kCheckInterval, deadline - now);
      cv_.wait_for(l, wait);
      if (Grantable(locks_[name], txn, mode)) break;
    }
    waiting_.erase(txn);
  }
  locks_[name].holders[txn] = mode;
  held_[txn].insert(name);
  return Status::OK();
}

void LockManager::ReleaseAll(uint64_t txn) {
  {
    std::lock_guard<std::mutex> l(mu_);
    auto h = held_.find(txn);
    if (h == held_.end()) return;
    for (const std::string& name : h->second) {
      auto it = locks_.find(name);
      if (it == locks_.end()) continue;
      it->second.holders.erase(txn);
      if (it->second.holders.empty()) locks_.erase(it);
    }
    held_.erase(h);
  }
  cv_.notify_all();
}

bool LockManager::Holds(uint64_t txn, const std::string& name, LockMode mode) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = locks_.find(name);
  if (it == locks_.end()) return false;
  auto h = it->second.holders.find(txn);
  return h != it->second.holders.end() && (h->second == LockMode::kExclusive || mode == LockMode::kShared);
}

std::vector<std::string> LockManager::ExclusiveLocksOf(uint64_t txn) const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<std::string> out;
  auto held = held_.find(txn);
  if (held == held_.end()) return out;
  for (const std::string& name : held->second) {
    auto it = locks_.find(name);
    if (it == locks_.end()) continue;
    auto h = it->second.holders.find(txn);
    if (h != it->second.holders.end() && h->second == LockMode::kExclusive) out.push_back(name);
  }
  return out;
}

std::vector<LockWaiter> LockManager::Waiters() const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<LockWaiter> out;
  for (const auto& [txn, w] : waiting_) {
    if (w.txn_started_us != 0) out.push_back(LockWaiter{txn, w.id, w.txn_started_us, w.name, w.mode});
  }
  return out;
}

std::vector<std::pair<uint64_t, LockMode>> LockManager::Holders(const std::string& name) const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<std::pair<uint64_t, LockMode>> out;
  auto it = locks_.find(name);
  if (it == locks_.end()) return out;
  out.assign(it->second.holders.begin(), it->second.holders.end());
  return out;
}

bool LockManager::AbortWait(uint64_t txn, uint64_t wait_id) {
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = waiting_.find(txn);
    if (it == waiting_.end() || it->second.id != wait_id) return false;
    it->second.victim = true;
  }
  cv_.notify_all();
  return true;
}

size_t LockManager::locks_held() const {
  std::lock_guard<std::mutex> l(mu_);
  return locks_.size();
}

}  // namespace shale::txn

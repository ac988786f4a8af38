#include "src/txn/lock_manager.h"

#include <algorithm>
#include <set>
#include <tuple>
#include <vector>

#include "src/common/errors.h"
#include "src/common/module_profile.h"

namespace shale::txn {

const LockMode* LockManager::LockState::Find(uint64_t txn) const {
  if (has_first && first_txn == txn) return &first_mode;
  if (more != nullptr) {
    for (const auto& [t, m] : *more) {
      if (t == txn) return &m;
    }
  }
  return nullptr;
}

void LockManager::LockState::Set(uint64_t txn, LockMode mode) {
  if (has_first && first_txn == txn) {
    first_mode = mode;
    return;
  }
  if (more != nullptr) {
    for (auto& [t, m] : *more) {
      if (t == txn) {
        m = mode;
        return;
      }
    }
  }
  if (!has_first) {
    has_first = true;
    first_txn = txn;
    first_mode = mode;
    return;
  }
  if (more == nullptr) more = std::make_unique<std::vector<std::pair<uint64_t, LockMode>>>();
  more->emplace_back(txn, mode);
}

void LockManager::LockState::Erase(uint64_t txn) {
  if (has_first && first_txn == txn) {
    if (more == nullptr) {
      has_first = false;
      return;
    }
    std::tie(first_txn, first_mode) = more->back();
    more->pop_back();
  } else if (more != nullptr) {
    for (size_t i = 0; i < more->size(); ++i) {
      if ((*more)[i].first == txn) {
        (*more)[i] = more->back();
        more->pop_back();
        break;
      }
    }
  }
  if (more != nullptr && more->empty()) more.reset();
}

size_t LockManager::LockTable::SlotOf(uint64_t hash) const {
  const size_t mask = slots_.size() - 1;
  size_t i = hash & mask;
  while (slots_[i].hash != 0 && slots_[i].hash != hash) i = (i + 1) & mask;
  return i;
}

LockManager::LockState* LockManager::LockTable::Find(uint64_t hash) {
  return const_cast<LockState*>(static_cast<const LockTable*>(this)->Find(hash));
}

const LockManager::LockState* LockManager::LockTable::Find(uint64_t hash) const {
  if (slots_.empty()) return nullptr;
  const Slot& slot = slots_[SlotOf(hash)];
  return slot.hash == hash ? &slot.state : nullptr;
}

LockManager::LockState* LockManager::LockTable::FindOrInsert(uint64_t hash) {
  if ((size_ + 1) * 2 > slots_.size()) Resize(std::max(kMinSlots, slots_.size() * 2));
  Slot& slot = slots_[SlotOf(hash)];
  if (slot.hash != hash) {
    slot.hash = hash;
    slot.state = LockState();
    ++size_;
  }
  return &slot.state;
}

void LockManager::LockTable::Erase(uint64_t hash) {
  if (slots_.empty()) return;
  const size_t mask = slots_.size() - 1;
  size_t hole = SlotOf(hash);
  if (slots_[hole].hash != hash) return;
  // Backward shift: move later entries of the probe run into the hole when
  // their home slot does not lie (cyclically) after it, so every probe still
  // reaches its entry without tombstones.
  for (size_t i = (hole + 1) & mask; slots_[i].hash != 0; i = (i + 1) & mask) {
    const size_t home = slots_[i].hash & mask;
    const bool home_in_gap = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
    if (home_in_gap) continue;
    slots_[hole] = std::move(slots_[i]);
    hole = i;
  }
  slots_[hole].hash = 0;
  slots_[hole].state = LockState();
  --size_;
  // A statement that locked a million rows leaves its slots behind: give
  // them back once the table is mostly empty.
  if (slots_.size() > kMinSlots && size_ * 8 < slots_.size()) Resize(std::max(kMinSlots, slots_.size() / 4));
}

void LockManager::LockTable::Resize(size_t capacity) { Rebuild(std::move(slots_), capacity); }

void LockManager::LockTable::Rebuild(Slots old, size_t capacity) {
  size_t n = kMinSlots;
  while (n < capacity) n *= 2;
  slots_ = Slots(n);
  size_ = 0;
  for (Slot& slot : old) {
    if (slot.hash == 0 || slot.state.empty()) continue;
    slots_[SlotOf(slot.hash)] = std::move(slot);
    ++size_;
  }
}

void LockManager::LockTable::EraseHolder(uint64_t txn) {
  size_t left = 0;
  for (Slot& slot : slots_) {
    if (slot.hash == 0) continue;
    slot.state.Erase(txn);
    if (!slot.state.empty()) ++left;
  }
  Rebuild(std::move(slots_), left * 2);
}

bool LockManager::Grantable(const LockState& s, uint64_t txn, LockMode mode) const {
  bool ok = true;
  s.ForEach([&](uint64_t holder, LockMode held) {
    if (holder != txn && LockModesConflict(mode, held)) ok = false;
  });
  return ok;
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
    const LockState* l = locks_.Find(w->second.hash);
    if (l == nullptr) continue;
    bool cycle = false;
    l->ForEach([&](uint64_t holder, LockMode held) {
      if (holder == t || !LockModesConflict(w->second.mode, held)) return;
      if (holder == start) cycle = true;
      if (seen.insert(holder).second) stack.push_back(holder);
    });
    if (cycle) return true;
  }
  return false;
}

Status LockManager::Lock(uint64_t txn, std::string_view name, LockMode mode, std::chrono::milliseconds timeout,
                         const std::atomic<bool>* interrupt, int64_t txn_started_us, bool* acquired) {
  if (acquired != nullptr) *acquired = false;
  profile::ModuleScope profile_scope(profile::Module::kLocks);
  const uint64_t hash = NameHash(name);
  std::unique_lock<std::mutex> l(mu_);
  // `entry` is valid until mu_ is released (a wait): then it is looked up
  // again, since other transactions may have moved or erased it.
  LockState* entry = locks_.FindOrInsert(hash);
  const LockMode* mine = entry->Find(txn);
  if (mine != nullptr && (*mine == LockMode::kExclusive || mode == LockMode::kShared)) {
    return Status::OK();  // already held strongly enough
  }
  const bool upgrade = mine != nullptr;
  if (!Grantable(*entry, txn, mode)) {
    waits_.fetch_add(1, std::memory_order_relaxed);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    waiting_[txn] = Wait{std::string(name), hash, mode, next_wait_id_++, txn_started_us, false};
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
        if (entry->empty()) locks_.Erase(hash);
        return failure;
      }
      auto now = std::chrono::steady_clock::now();
      auto wait = std::min<std::chrono::steady_clock::duration>(kCheckInterval, deadline - now);
      cv_.wait_for(l, wait);
      entry = locks_.FindOrInsert(hash);
      if (Grantable(*entry, txn, mode)) break;
    }
    waiting_.erase(txn);
  }
  // An upgrade (S to X) keeps its one entry in held_.
  if (!upgrade) {
    Held& held = held_[txn];
    held.hashes.push_back(hash);
    held.names.Append(name);
  }
  entry->Set(txn, mode);
  if (acquired != nullptr) *acquired = true;
  return Status::OK();
}

void LockManager::ReleaseAll(uint64_t txn) {
  {
    std::lock_guard<std::mutex> l(mu_);
    auto h = held_.find(txn);
    if (h == held_.end()) return;
    if (h->second.hashes.size() >= kMinSlots && h->second.hashes.size() * 4 >= locks_.size()) {
      // Most of the table (a bulk UPDATE or DELETE): one pass over it costs
      // less than a probe per lock.
      locks_.EraseHolder(txn);
    } else {
      for (const uint64_t hash : h->second.hashes) {
        LockState* lock = locks_.Find(hash);
        if (lock == nullptr) continue;  // a second name with the same hash (invariant 3)
        lock->Erase(txn);
        if (lock->empty()) locks_.Erase(hash);
      }
    }
    held_.erase(h);
  }
  cv_.notify_all();
}

bool LockManager::Holds(uint64_t txn, const std::string& name, LockMode mode) const {
  std::lock_guard<std::mutex> l(mu_);
  const LockState* lock = locks_.Find(NameHash(name));
  if (lock == nullptr) return false;
  const LockMode* held = lock->Find(txn);
  return held != nullptr && (*held == LockMode::kExclusive || mode == LockMode::kShared);
}

std::vector<std::string> LockManager::ExclusiveLocksOf(uint64_t txn) const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<std::string> out;
  auto held = held_.find(txn);
  if (held == held_.end()) return out;
  for (size_t i = 0; i < held->second.hashes.size(); ++i) {
    const LockState* lock = locks_.Find(held->second.hashes[i]);
    if (lock == nullptr) continue;
    const LockMode* mode = lock->Find(txn);
    if (mode != nullptr && *mode == LockMode::kExclusive) out.emplace_back(held->second.names[i]);
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
  const LockState* lock = locks_.Find(NameHash(name));
  if (lock == nullptr) return out;
  lock->ForEach([&](uint64_t txn, LockMode mode) { out.emplace_back(txn, mode); });
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

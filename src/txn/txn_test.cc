#include <atomic>
#include <chrono>
#include <map>
#include <random>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "src/common/testing/temp_dir.h"
#include "src/txn/deadlock_detector.h"
#include "src/txn/lock_manager.h"
#include "src/txn/timestamp_oracle.h"
#include "src/txn/transaction.h"

namespace shale::txn {
namespace {

using namespace std::chrono_literals;

TEST(TimestampOracleTest, NeverReusesATimestampAfterReopen) {
  shale::testing::TempDir dir;
  uint64_t last = 0;
  {
    auto meta = storage::MetaStore::Open(dir.path() + "/meta");
    ASSERT_TRUE(meta.ok());
    auto oracle = TimestampOracle::Open(meta->get(), /*block=*/4);
    ASSERT_TRUE(oracle.ok());
    for (int i = 0; i < 10; ++i) {  // crosses two block reservations
      auto ts = (*oracle)->BeginCommit();
      ASSERT_TRUE(ts.ok());
      EXPECT_GT(*ts, last);
      last = *ts;
      EXPECT_EQ((*oracle)->ReadTimestamp(), last - 1);  // in flight: not readable yet
      (*oracle)->FinishCommit(*ts);
      EXPECT_EQ((*oracle)->ReadTimestamp(), last);
    }
  }
  auto meta = storage::MetaStore::Open(dir.path() + "/meta");
  ASSERT_TRUE(meta.ok());
  auto oracle = TimestampOracle::Open(meta->get(), 4);
  ASSERT_TRUE(oracle.ok());
  EXPECT_GE((*oracle)->ReadTimestamp(), last);
  auto ts = (*oracle)->BeginCommit();
  ASSERT_TRUE(ts.ok());
  EXPECT_GT(*ts, last);
}

TEST(TimestampOracleTest, ReadTimestampStaysBelowOldestCommitInFlight) {
  shale::testing::TempDir dir;
  auto meta = storage::MetaStore::Open(dir.path() + "/meta");
  ASSERT_TRUE(meta.ok());
  auto oracle = TimestampOracle::Open(meta->get());
  ASSERT_TRUE(oracle.ok());
  uint64_t a = *(*oracle)->BeginCommit();
  uint64_t b = *(*oracle)->BeginCommit();
  (*oracle)->FinishCommit(b);
  EXPECT_EQ((*oracle)->ReadTimestamp(), a - 1);  // b done, a not: neither readable
  (*oracle)->FinishCommit(a);
  EXPECT_EQ((*oracle)->ReadTimestamp(), b);
}

TEST(LockManagerTest, SharedLocksCoexistExclusiveWaitsAndTimesOut) {
  LockManager locks;
  ASSERT_TRUE(locks.Lock(1, "r", LockMode::kShared, 1s, nullptr).ok());
  ASSERT_TRUE(locks.Lock(2, "r", LockMode::kShared, 1s, nullptr).ok());
  auto start = std::chrono::steady_clock::now();
  Status st = locks.Lock(3, "r", LockMode::kExclusive, 100ms, nullptr);
  EXPECT_EQ(st.mysql_code(), 1205);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 100ms);
  locks.ReleaseAll(1);
  locks.ReleaseAll(2);
  EXPECT_TRUE(locks.Lock(3, "r", LockMode::kExclusive, 100ms, nullptr).ok());
  EXPECT_TRUE(locks.Holds(3, "r", LockMode::kExclusive));
  EXPECT_FALSE(locks.Holds(1, "r", LockMode::kShared));
}

// The lock table against a model: many transactions taking and releasing
// overlapping sets of names (growing, shrinking and erasing in the middle of
// probe runs), every grant and refusal as the model says.
// Random locks and releases of `txns` transactions on `names` names,
// checked against a model after every step: grants, `acquired`, the locks
// held after each release (a transaction releasing a large share of the
// table takes ReleaseAll's one-pass path), and ExclusiveLocksOf.
void RunLockModel(uint64_t txns, int release_one_in, int names_count, uint64_t seed) {
  LockManager locks;
  std::map<std::string, std::map<uint64_t, LockMode>> model;
  std::map<uint64_t, std::set<std::string>> held;
  std::mt19937_64 rng(seed);
  auto check_all = [&](int step) {
    size_t names = 0;
    for (const auto& [name, holders] : model) {
      ++names;
      for (const auto& [txn, mode] : holders) ASSERT_TRUE(locks.Holds(txn, name, mode)) << name << " step " << step;
    }
    ASSERT_EQ(locks.locks_held(), names) << "step " << step;
    for (uint64_t txn = 1; txn <= txns; ++txn) {
      std::vector<std::string> want;
      for (const std::string& name : held[txn]) {
        if (model[name][txn] == LockMode::kExclusive) want.push_back(name);
      }
      std::vector<std::string> got = locks.ExclusiveLocksOf(txn);
      std::sort(got.begin(), got.end());
      ASSERT_EQ(got, want) << "txn " << txn << " step " << step;
    }
  };
  for (int step = 0; step < 60000; ++step) {
    const uint64_t txn = 1 + rng() % txns;
    if (rng() % release_one_in == 0) {
      locks.ReleaseAll(txn);
      for (const std::string& name : held[txn]) {
        model[name].erase(txn);
        if (model[name].empty()) model.erase(name);
      }
      held.erase(txn);
      check_all(step);
      continue;
    }
    const std::string name = "row" + std::to_string(rng() % names_count);
    const LockMode mode = rng() % 3 == 0 ? LockMode::kShared : LockMode::kExclusive;
    bool grantable = true;
    for (const auto& [holder, m] : model[name]) {
      if (holder != txn && LockModesConflict(mode, m)) grantable = false;
    }
    const auto had = model[name].find(txn);
    const bool held_enough =
        had != model[name].end() && (had->second == LockMode::kExclusive || mode == LockMode::kShared);
    bool acquired = true;
    Status st = locks.Lock(txn, name, mode, 0ms, nullptr, 0, &acquired);
    ASSERT_EQ(st.ok(), grantable) << "step " << step << " " << st.ToString();
    ASSERT_EQ(acquired, st.ok() && !held_enough) << "step " << step;
    if (st.ok()) {
      LockMode& m = model[name][txn];
      if (mode == LockMode::kExclusive) m = LockMode::kExclusive;
      else if (held[txn].count(name) == 0) m = LockMode::kShared;
      held[txn].insert(name);
    } else if (model[name].empty()) {
      model.erase(name);
    }
  }
  check_all(-1);
  for (uint64_t txn = 1; txn <= txns; ++txn) locks.ReleaseAll(txn);
  EXPECT_EQ(locks.locks_held(), 0u);
}

TEST(LockManagerTest, ManyLocksMatchAModel) { RunLockModel(12, 500, 20000, 7); }

TEST(LockManagerTest, BulkReleasesMatchAModel) {
  // Three transactions holding thousands of locks each, often most of the
  // table, many of them shared by two or three holders.
  RunLockModel(3, 4000, 6000, 11);
}

TEST(LockManagerTest, WaiterIsGrantedOnRelease) {
  LockManager locks;
  ASSERT_TRUE(locks.Lock(1, "r", LockMode::kExclusive, 1s, nullptr).ok());
  std::atomic<bool> granted{false};
  std::thread waiter([&] {
    EXPECT_TRUE(locks.Lock(2, "r", LockMode::kExclusive, 5s, nullptr).ok());
    granted = true;
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(granted.load());
  locks.ReleaseAll(1);
  waiter.join();
  EXPECT_TRUE(granted.load());
}

TEST(LockManagerTest, DeadlockFailsExactlyOneWaiter) {
  LockManager locks;
  ASSERT_TRUE(locks.Lock(1, "a", LockMode::kExclusive, 1s, nullptr).ok());
  ASSERT_TRUE(locks.Lock(2, "b", LockMode::kExclusive, 1s, nullptr).ok());
  Status first;
  std::thread t([&] { first = locks.Lock(1, "b", LockMode::kExclusive, 10s, nullptr); });
  // Txn 1 must be waiting before txn 2 closes the cycle (a fixed sleep was
  // not always enough on a loaded machine: then txn 1 was the victim and
  // txn 2 timed out waiting for it).
  const auto waiting_deadline = std::chrono::steady_clock::now() + 10s;
  while (locks.waits() < 1 && std::chrono::steady_clock::now() < waiting_deadline) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(locks.waits(), 1u);
  auto start = std::chrono::steady_clock::now();
  Status second = locks.Lock(2, "a", LockMode::kExclusive, 10s, nullptr);
  EXPECT_EQ(second.mysql_code(), 1213);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  locks.ReleaseAll(2);  // the victim rolls back
  t.join();
  EXPECT_TRUE(first.ok()) << first.ToString();
  EXPECT_EQ(locks.deadlocks(), 1u);
}

TEST(LockManagerTest, InterruptStopsTheWait) {
  LockManager locks;
  ASSERT_TRUE(locks.Lock(1, "r", LockMode::kExclusive, 1s, nullptr).ok());
  std::atomic<bool> kill{false};
  std::thread killer([&] {
    std::this_thread::sleep_for(50ms);
    kill = true;
  });
  Status st = locks.Lock(2, "r", LockMode::kShared, 10s, &kill);
  killer.join();
  EXPECT_EQ(st.mysql_code(), 1317);
}

// The cluster's detector ends exactly the wait it names, with 1213; other
// waits, and a stale wait id, are left alone.
TEST(LockManagerTest, AbortWaitEndsThatWaitWith1213) {
  LockManager locks;
  ASSERT_TRUE(locks.Lock(1, "r", LockMode::kExclusive, 1s, nullptr).ok());
  Status st;
  std::thread waiter([&] { st = locks.Lock(2, "r", LockMode::kExclusive, 10s, nullptr, /*txn_started_us=*/42); });
  std::vector<LockWaiter> waiters;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (waiters.empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
    waiters = locks.Waiters();
  }
  ASSERT_EQ(waiters.size(), 1u);
  EXPECT_EQ(waiters[0].txn, 2u);
  EXPECT_EQ(waiters[0].name, "r");
  EXPECT_EQ(waiters[0].txn_started_us, 42);
  auto holders = locks.Holders("r");
  ASSERT_EQ(holders.size(), 1u);
  EXPECT_EQ(holders[0].first, 1u);
  EXPECT_FALSE(locks.AbortWait(2, waiters[0].wait_id + 1));  // another wait of txn 2
  EXPECT_FALSE(locks.AbortWait(1, waiters[0].wait_id));      // txn 1 is not waiting
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(locks.AbortWait(2, waiters[0].wait_id));
  waiter.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  EXPECT_EQ(st.mysql_code(), 1213) << st.ToString();
  EXPECT_TRUE(locks.Waiters().empty());
  EXPECT_TRUE(locks.Holds(1, "r", LockMode::kExclusive));
  // A remote transaction's slice of a wait (no start time) is reported by
  // its coordinator, not here.
  std::thread remote([&] { (void)locks.Lock(3, "r", LockMode::kShared, 200ms, nullptr); });
  std::this_thread::sleep_for(50ms);
  EXPECT_TRUE(locks.Waiters().empty());
  remote.join();
}

WaitEdge Edge(const std::string& waiter, int64_t started, const std::string& holder, uint64_t wait_id = 1) {
  LockWaitInfo w;
  w.txn = TxnKey{waiter.substr(0, waiter.find('/')), std::stoull(waiter.substr(waiter.find('/') + 1))};
  w.txn_started_us = started;
  w.node = "n9";
  w.name = "lock of " + holder;
  w.mode = LockMode::kExclusive;
  w.wait_id = wait_id;
  return WaitEdge{w, TxnKey{holder.substr(0, holder.find('/')), std::stoull(holder.substr(holder.find('/') + 1))}};
}

TEST(DeadlockDetectorTest, ChoosesTheYoungestOfEachCycleAndNothingElse) {
  // A chain is no deadlock.
  EXPECT_TRUE(ChooseDeadlockVictims({Edge("n1/1", 10, "n2/1"), Edge("n2/1", 20, "n3/1")}).empty());
  // Two transactions on two nodes: the younger (later start) is the victim.
  auto v = ChooseDeadlockVictims({Edge("n1/1", 10, "n2/7"), Edge("n2/7", 20, "n1/1")});
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].txn.ToString(), "n2/7");
  // A cycle of three with a waiter hanging off it, and a separate cycle:
  // one victim each; the hanging waiter is not one.
  v = ChooseDeadlockVictims({Edge("n1/1", 50, "n2/2"), Edge("n2/2", 10, "n3/3"), Edge("n3/3", 30, "n1/1"),
                             Edge("n1/9", 99, "n1/1"), Edge("n2/5", 5, "n3/6"), Edge("n3/6", 6, "n2/5")});
  ASSERT_EQ(v.size(), 2u);
  std::set<std::string> victims = {v[0].txn.ToString(), v[1].txn.ToString()};
  EXPECT_EQ(victims, (std::set<std::string>{"n1/1", "n3/6"}));
  // Two cycles sharing a transaction: removing it breaks both.
  v = ChooseDeadlockVictims({Edge("n1/1", 90, "n2/2"), Edge("n2/2", 10, "n1/1"), Edge("n1/1", 90, "n3/3", 2),
                             Edge("n3/3", 20, "n1/1")});
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].txn.ToString(), "n1/1");
}

class TransactionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto meta = storage::MetaStore::Open(dir_.path() + "/meta");
    ASSERT_TRUE(meta.ok());
    meta_ = std::move(*meta);
    auto store = storage::SliceStore::Open(dir_.path() + "/slices");
    ASSERT_TRUE(store.ok());
    store_ = std::move(*store);
    slice_ = *store_->CreateSlice(1);
    other_ = *store_->CreateSlice(2);
    TxnManagerOptions o;
    o.gc_interval_ms = 3600 * 1000;  // collected by hand
    auto m = TxnManager::Open(store_.get(), meta_.get(), o);
    ASSERT_TRUE(m.ok());
    manager_ = std::move(*m);
  }
  std::string Read(Transaction* t, const std::string& key, bool latest = false) {
    std::string v;
    Status st = t->Get(slice_, key, latest, &v);
    return st.ok() ? v : (st.IsNotFound() ? "<none>" : st.ToString());
  }
  std::string Scan(Transaction* t) {
    std::string out;
    auto it = t->NewIterator(slice_, storage::KeyRange::All(), false);
    for (; it->Valid(); it->Next()) out += std::string(it->key()) + "=" + std::string(it->value()) + ";";
    return out;
  }

  shale::testing::TempDir dir_;
  std::unique_ptr<storage::MetaStore> meta_;
  std::unique_ptr<storage::SliceStore> store_;
  storage::Slice* slice_ = nullptr;
  storage::Slice* other_ = nullptr;
  std::unique_ptr<TxnManager> manager_;
};

TEST_F(TransactionTest, UncommittedWritesAreInvisibleToOthersAndVisibleToSelf) {
  auto a = manager_->Begin({});
  auto b = manager_->Begin({});
  EXPECT_EQ(Read(b.get(), "k"), "<none>");  // b's snapshot is taken here
  a->Put(slice_->id(), "k", "1");
  a->Put(other_->id(), "x", "9");
  EXPECT_EQ(Read(a.get(), "k"), "1");
  EXPECT_EQ(Scan(a.get()), "k=1;");
  ASSERT_TRUE(a->Commit().ok());
  EXPECT_EQ(Read(b.get(), "k"), "<none>");  // REPEATABLE READ: b's snapshot predates the commit
  EXPECT_EQ(Read(b.get(), "k", /*latest=*/true), "1");
  auto c = manager_->Begin({});
  EXPECT_EQ(Read(c.get(), "k"), "1");
}

// The fill of new slices (an index build) is one commit: its versions are
// visible to snapshots taken after it and not to one taken before, it
// queues nothing for garbage collection (every key's only version), and
// an overwrite through a transaction afterwards hides it as usual.
TEST_F(TransactionTest, FillNewSlicesCommitsOnceAndQueuesNoGarbage) {
  auto before = manager_->Begin({});
  EXPECT_EQ(Scan(before.get()), "");
  const uint64_t queued = manager_->stats().gc_queued;
  std::vector<std::string> keys, values;
  for (int i = 0; i < 2000; ++i) {
    keys.push_back(fmt::format("k{:05}", i));
    values.push_back(std::to_string(i));
  }
  TxnManager::SliceFill a, b{{"x", "9"}};
  for (int i = 0; i < 2000; ++i) a.emplace_back(keys[i], values[i]);
  ASSERT_TRUE(manager_->FillNewSlices({{slice_->id(), a}, {other_->id(), b}}).ok());
  EXPECT_EQ(manager_->stats().gc_queued, queued);
  EXPECT_EQ(Scan(before.get()), "");
  auto after = manager_->Begin({});
  EXPECT_EQ(Read(after.get(), "k00000"), "0");
  EXPECT_EQ(Read(after.get(), "k01999"), "1999");
  std::string v;
  ASSERT_TRUE(after->Get(other_, "x", false, &v).ok());
  EXPECT_EQ(v, "9");
  auto it = after->NewIterator(slice_, storage::KeyRange::All(), false);
  int n = 0;
  for (; it->Valid(); it->Next()) ++n;
  EXPECT_EQ(n, 2000);
  auto w = manager_->Begin({});
  w->Put(slice_->id(), "k00007", "new");
  ASSERT_TRUE(w->Commit().ok());
  EXPECT_EQ(Read(after.get(), "k00007"), "7");
  EXPECT_EQ(Read(manager_->Begin({}).get(), "k00007"), "new");
}

// A transaction prepared here whose share is not applied (HoldReads): a
// read of one of its slices at or above its timestamp waits until it is
// released; reads below it, and of other slices, do not wait.
TEST_F(TransactionTest, AReadAboveAPreparedShareWaitsUntilItIsApplied) {
  manager_->HoldReads("n2/7", 100, {slice_->id()});
  const auto node = std::string("n1");
  EXPECT_TRUE(manager_->CheckReadable(slice_->id(), 99, node).ok());
  EXPECT_TRUE(manager_->CheckReadable(other_->id(), 150, node).ok());
  EXPECT_TRUE(manager_->CheckReadable(slice_->id(), storage::kLatestSnapshot, node).ok());
  const auto start = std::chrono::steady_clock::now();
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    manager_->ReleaseReads("n2/7");
  });
  EXPECT_TRUE(manager_->CheckReadable(slice_->id(), 100, node).ok());
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(250));
  release.join();
  EXPECT_TRUE(manager_->CheckReadable(slice_->id(), 150, node).ok());
}

// It waits at most read_hold_wait_ms, then fails with the retryable 1047.
TEST_F(TransactionTest, AReadAboveAPreparedShareGivesUpRetryably) {
  manager_.reset();
  TxnManagerOptions o;
  o.gc_interval_ms = 3600 * 1000;
  o.read_hold_wait_ms = 100;
  auto m = TxnManager::Open(store_.get(), meta_.get(), o);
  ASSERT_TRUE(m.ok());
  manager_ = std::move(*m);
  manager_->HoldReads("n2/7", 100, {slice_->id()});
  Status st = manager_->CheckReadable(slice_->id(), 200, "n1");
  EXPECT_EQ(st.mysql_code(), 1047) << st.ToString();
  manager_->ReleaseReads("n2/7");
  EXPECT_TRUE(manager_->CheckReadable(slice_->id(), 200, "n1").ok());
}

// A replica copied from a snapshot stream at T (the rebalancer) holds no
// versions older than T's: a read below T must fail retryably (1047), not
// miss rows; the mark survives a restart.
TEST_F(TransactionTest, ACopiedReplicaRefusesSnapshotsBelowItsCopy) {
  auto a = manager_->Begin({});
  a->Put(slice_->id(), "k", "1");
  ASSERT_TRUE(a->Commit().ok());
  auto old = manager_->Begin({});
  EXPECT_EQ(Read(old.get(), "k"), "1");  // takes its snapshot
  auto c = manager_->Begin({});
  c->Put(slice_->id(), "k", "2");
  ASSERT_TRUE(c->Commit().ok());
  const uint64_t copied_at = manager_->oracle()->ReadTimestamp();
  ASSERT_TRUE(manager_->NoteReadableFrom(slice_->id(), copied_at).ok());
  ASSERT_TRUE(manager_->NoteReadableFrom(slice_->id(), copied_at - 1).ok());  // never lowered
  EXPECT_EQ(manager_->ReadableFrom(slice_->id()), copied_at);
  std::string v;
  Status st = old->Get(slice_, "k", false, &v);
  EXPECT_EQ(st.mysql_code(), 1047) << st.ToString();
  auto it = old->NewIterator(slice_, storage::KeyRange::All(), false);
  EXPECT_FALSE(it->Valid());
  EXPECT_EQ(it->status().mysql_code(), 1047);
  EXPECT_EQ(Read(old.get(), "k", /*latest=*/true), "2");  // locking reads read the newest version
  EXPECT_EQ(Read(old.get(), "x"), Read(old.get(), "k"));  // every key of the slice, found or not
  // Other slices and newer snapshots read normally.
  std::string other;
  EXPECT_TRUE(old->Get(other_, "x", false, &other).IsNotFound());
  auto fresh = manager_->Begin({});
  EXPECT_EQ(Read(fresh.get(), "k"), "2");
  old->Rollback();
  fresh->Rollback();
  manager_.reset();
  auto reopened = TxnManager::Open(store_.get(), meta_.get(), {});
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ((*reopened)->ReadableFrom(slice_->id()), copied_at);
  EXPECT_EQ((*reopened)->ReadableFrom(other_->id()), 0u);
}

// A restarted coordinator must not name a new transaction with the key of
// one another node may still hold a prepared or decision record of.
TEST_F(TransactionTest, TransactionIdsAreNotReusedAfterARestart) {
  const uint64_t first = manager_->Begin({})->id();
  const uint64_t second = manager_->NewOwnerId();
  EXPECT_GT(second, first);
  manager_.reset();
  for (int restart = 1; restart <= 2; ++restart) {
    auto reopened = TxnManager::Open(store_.get(), meta_.get(), {});
    ASSERT_TRUE(reopened.ok());
    const uint64_t id = (*reopened)->Begin({})->id();
    EXPECT_GT(id, second);
    EXPECT_EQ(id, static_cast<uint64_t>(restart) * 1'000'000'000'000ULL + 1);
  }
}

TEST_F(TransactionTest, ReadCommittedTakesASnapshotPerStatement) {
  TxnOptions rc;
  rc.isolation = Isolation::kReadCommitted;
  auto b = manager_->Begin(rc);
  b->BeginStatement();
  EXPECT_EQ(Read(b.get(), "k"), "<none>");
  auto a = manager_->Begin({});
  a->Put(slice_->id(), "k", "1");
  ASSERT_TRUE(a->Commit().ok());
  EXPECT_EQ(Read(b.get(), "k"), "<none>");  // same statement
  b->BeginStatement();
  EXPECT_EQ(Read(b.get(), "k"), "1");
}

TEST_F(TransactionTest, OverlayScanMergesPutsAndHidesDeletes) {
  auto setup = manager_->Begin({});
  for (const char* k : {"a", "c", "e"}) setup->Put(slice_->id(), k, "old");
  ASSERT_TRUE(setup->Commit().ok());
  auto t = manager_->Begin({});
  t->Put(slice_->id(), "b", "new");
  t->Delete(slice_->id(), "c");
  t->Put(slice_->id(), "e", "new");
  t->Put(slice_->id(), "f", "new");
  EXPECT_EQ(Scan(t.get()), "a=old;b=new;e=new;f=new;");
  storage::KeyRange r;
  r.has_start = true;
  r.start = "b";
  r.has_end = true;
  r.end = "e";
  r.end_inclusive = false;
  std::string out;
  auto it = t->NewIterator(slice_, r, false);
  for (; it->Valid(); it->Next()) out += std::string(it->key()) + ";";
  EXPECT_EQ(out, "b;");
}

TEST_F(TransactionTest, StatementRollbackUndoesOnlyThatStatement) {
  auto t = manager_->Begin({});
  t->BeginStatement();
  t->Put(slice_->id(), "a", "1");
  t->BeginStatement();
  t->Put(slice_->id(), "a", "2");
  t->Put(slice_->id(), "b", "2");
  t->RollbackStatement();
  EXPECT_EQ(Read(t.get(), "a"), "1");
  EXPECT_EQ(Read(t.get(), "b"), "<none>");
  ASSERT_TRUE(t->Commit().ok());
  auto r = manager_->Begin({});
  EXPECT_EQ(Scan(r.get()), "a=1;");
}

TEST_F(TransactionTest, RollbackToSavepointUndoesLaterWritesAndKeepsLocks) {
  auto t = manager_->Begin({});
  t->BeginStatement();
  t->Put(slice_->id(), "a", "1");
  t->SetSavepoint("s1");
  t->BeginStatement();
  ASSERT_TRUE(t->Lock("row", LockMode::kExclusive, 1s, nullptr).ok());
  t->Put(slice_->id(), "a", "2");
  t->Put(slice_->id(), "b", "2");
  t->SetSavepoint("s2");
  t->BeginStatement();
  t->Delete(slice_->id(), "a");
  ASSERT_TRUE(t->RollbackToSavepoint("S2").ok());  // names ignore case
  EXPECT_EQ(Scan(t.get()), "a=2;b=2;");
  ASSERT_TRUE(t->RollbackToSavepoint("s1").ok());
  EXPECT_EQ(Scan(t.get()), "a=1;");
  // s2 went with the rollback to s1; s1 stays until released.
  EXPECT_EQ(t->RollbackToSavepoint("s2").mysql_code(), 1305);
  ASSERT_TRUE(t->RollbackToSavepoint("s1").ok());
  ASSERT_TRUE(t->ReleaseSavepoint("s1").ok());
  EXPECT_EQ(t->ReleaseSavepoint("s1").mysql_code(), 1305);
  // The lock taken after s1 is still held.
  auto u = manager_->Begin({});
  EXPECT_FALSE(u->Lock("row", LockMode::kExclusive, 10ms, nullptr).ok());
  ASSERT_TRUE(t->Commit().ok());
  auto r = manager_->Begin({});
  EXPECT_EQ(Scan(r.get()), "a=1;");
}

TEST_F(TransactionTest, RollbackWritesNothingAndReleasesLocks) {
  auto t = manager_->Begin({});
  ASSERT_TRUE(t->Lock("row", LockMode::kExclusive, 1s, nullptr).ok());
  t->Put(slice_->id(), "a", "1");
  t->Rollback();
  EXPECT_EQ(slice_->GetStats().rows, 0u);
  auto u = manager_->Begin({});
  EXPECT_TRUE(u->Lock("row", LockMode::kExclusive, 10ms, nullptr).ok());
}

TEST_F(TransactionTest, GarbageCollectionKeepsWhatASnapshotNeeds) {
  auto w = manager_->Begin({});
  w->Put(slice_->id(), "k", "1");
  ASSERT_TRUE(w->Commit().ok());
  auto reader = manager_->Begin({});
  EXPECT_EQ(Read(reader.get(), "k"), "1");
  for (const char* v : {"2", "3"}) {
    auto t = manager_->Begin({});
    t->Put(slice_->id(), "k", v);
    ASSERT_TRUE(t->Commit().ok());
  }
  manager_->TEST_CollectGarbage();
  EXPECT_EQ(Read(reader.get(), "k"), "1");  // still there for the open snapshot
  (void)reader->Commit();
  auto d = manager_->Begin({});
  d->Delete(slice_->id(), "k");
  ASSERT_TRUE(d->Commit().ok());
  manager_->TEST_CollectGarbage();
  EXPECT_EQ(slice_->GetStats().rows, 0u);  // every version and the tombstone
}

// A commit of many keys of a slice is collected by one pass over the slice
// (the keys are a large share of it), and a commit whose keys do not fit
// the queue has its slice swept whole: either way every version a snapshot
// can see stays and every other goes.
TEST_F(TransactionTest, BulkCommitsAreSweptWholeAndKeepWhatSnapshotsNeed) {
  constexpr int kKeys = 20000;  // past the pass's sweep threshold
  auto key = [](int i) { return fmt::format("k{:06}", i); };
  auto write_all = [&](const std::string& value) {
    auto t = manager_->Begin({});
    for (int i = 0; i < kKeys; ++i) t->Put(slice_->id(), key(i), value);
    ASSERT_TRUE(t->Commit().ok());
  };
  write_all("1");
  auto reader = manager_->Begin({});
  EXPECT_EQ(Read(reader.get(), key(7)), "1");
  write_all("2");
  manager_->TEST_CollectGarbage();
  EXPECT_EQ(slice_->GetStats().rows, 2u * kKeys);  // the reader needs every "1"
  EXPECT_EQ(Read(reader.get(), key(kKeys - 1)), "1");
  (void)reader->Commit();
  manager_->TEST_CollectGarbage();
  EXPECT_EQ(slice_->GetStats().rows, 1u * kKeys);
  auto t = manager_->Begin({});
  EXPECT_EQ(Read(t.get(), key(123)), "2");
  (void)t->Commit();
  auto d = manager_->Begin({});
  for (int i = 0; i < kKeys; ++i) d->Delete(slice_->id(), key(i));
  ASSERT_TRUE(d->Commit().ok());
  manager_->TEST_CollectGarbage();
  EXPECT_EQ(slice_->GetStats().rows, 0u);
}

TEST_F(TransactionTest, KeysBeyondTheQueueHaveTheirSliceSweptWhole) {
  TxnManagerOptions o;
  o.gc_interval_ms = 3600 * 1000;
  o.gc_queue_keys = 10;
  manager_.reset();
  auto m = TxnManager::Open(store_.get(), meta_.get(), o);
  ASSERT_TRUE(m.ok());
  manager_ = std::move(*m);
  auto put = [&](storage::Slice* slice, int keys, const std::string& value) {
    auto t = manager_->Begin({});
    for (int i = 0; i < keys; ++i) t->Put(slice->id(), fmt::format("k{:03}", i), value);
    ASSERT_TRUE(t->Commit().ok());
  };
  put(slice_, 50, "1");
  put(other_, 5, "1");  // fits the queue
  auto reader = manager_->Begin({});
  EXPECT_EQ(Read(reader.get(), "k049"), "1");
  put(slice_, 50, "2");  // does not fit: swept once the reader is gone
  put(other_, 5, "2");
  manager_->TEST_CollectGarbage();
  EXPECT_EQ(slice_->GetStats().rows, 100u);
  EXPECT_EQ(other_->GetStats().rows, 10u);
  EXPECT_EQ(Read(reader.get(), "k000"), "1");
  (void)reader->Commit();
  manager_->TEST_CollectGarbage();
  EXPECT_EQ(slice_->GetStats().rows, 50u);
  EXPECT_EQ(other_->GetStats().rows, 5u);
}

// A new row's put is not queued for collection (FreshKeys); every older
// version of its key still goes, through the delete that queued it.
TEST_F(TransactionTest, FreshPutsAreNotQueuedAndLeaveNoVersionBehind) {
  auto queued = [&] { return manager_->stats().gc_queued; };
  auto put = [&](const char* key, const char* value, bool fresh) {
    auto t = manager_->Begin({});
    t->Put(slice_->id(), key, value, fresh);
    ASSERT_TRUE(t->Commit().ok());
  };
  put("a", "1", /*fresh=*/true);
  EXPECT_EQ(queued(), 0u);
  {
    auto d = manager_->Begin({});
    d->Delete(slice_->id(), "a");
    ASSERT_TRUE(d->Commit().ok());
  }
  EXPECT_EQ(queued(), 1u);
  put("a", "2", /*fresh=*/true);  // a new row over the tombstone
  EXPECT_EQ(queued(), 1u);
  manager_->TEST_CollectGarbage();
  EXPECT_EQ(slice_->GetStats().rows, 1u);  // "2" alone: "1" and the tombstone went with the delete's entry
  {
    // Written before (not fresh) in this transaction: queued.
    auto t = manager_->Begin({});
    t->Put(slice_->id(), "b", "1");
    t->Put(slice_->id(), "b", "2", /*fresh=*/true);
    // Fresh, but its last write is a delete: the tombstone is queued.
    t->Put(slice_->id(), "c", "1", /*fresh=*/true);
    t->Delete(slice_->id(), "c");
    // Fresh, then rolled back by its statement: nothing of it is written.
    t->BeginStatement();
    t->Put(slice_->id(), "d", "1", /*fresh=*/true);
    t->RollbackStatement();
    ASSERT_TRUE(t->Commit().ok());
  }
  EXPECT_EQ(queued(), 3u);
  manager_->TEST_CollectGarbage();
  EXPECT_EQ(slice_->GetStats().rows, 2u);  // a=2, b=2
}

// PutAll takes a statement's map whole when the slice has no write yet
// (one undo entry: a rollback drops the slice's writes, later statements'
// keys first), else key by key; either way its fresh puts are not queued
// for collection and every other key is.
TEST_F(TransactionTest, PutAllBuffersAStatementsWritesAndUndoesThemWhole) {
  auto queued = [&] { return manager_->stats().gc_queued; };
  auto statement = [](std::initializer_list<std::pair<const char*, const char*>> writes,
                      std::initializer_list<const char*> fresh, SliceWrites* map, std::vector<std::string_view>* views) {
    for (const auto& [k, v] : writes) {
      (*map)[k] = v == nullptr ? std::nullopt : std::optional<std::string>(v);
    }
    for (const char* k : fresh) views->push_back(map->find(k)->first);
  };
  auto t = manager_->Begin({});
  SliceHandle h{slice_->id(), slice_, nullptr, nullptr};
  t->BeginStatement();
  {
    SliceWrites m;
    std::vector<std::string_view> f;
    statement({{"a", "1"}, {"b", "1"}, {"c", "1"}}, {"a", "c"}, &m, &f);
    t->PutAll(h, std::move(m), std::move(f));  // whole
  }
  t->SetSavepoint("s");
  t->BeginStatement();
  {
    SliceWrites m;
    std::vector<std::string_view> f;
    statement({{"b", "2"}, {"d", "2"}, {"e", "2"}, {"a", nullptr}}, {"e", "d"}, &m, &f);
    t->PutAll(h, std::move(m), std::move(f));  // key by key, fresh unsorted
  }
  EXPECT_EQ(Scan(t.get()), "b=2;c=1;d=2;e=2;");
  t->RollbackStatement();
  EXPECT_EQ(Scan(t.get()), "a=1;b=1;c=1;");
  t->BeginStatement();
  {
    SliceWrites m;
    std::vector<std::string_view> f;
    statement({{"x", "3"}}, {"x"}, &m, &f);
    t->PutAll(h, std::move(m), std::move(f));
  }
  ASSERT_TRUE(t->RollbackToSavepoint("s").ok());
  EXPECT_EQ(Scan(t.get()), "a=1;b=1;c=1;");
  t->BeginStatement();
  {
    SliceWrites m;
    std::vector<std::string_view> f;
    statement({{"d", "4"}, {"e", "4"}}, {"e"}, &m, &f);
    t->PutAll(h, std::move(m), std::move(f));
  }
  ASSERT_TRUE(t->Commit().ok());
  auto r = manager_->Begin({});
  EXPECT_EQ(Scan(r.get()), "a=1;b=1;c=1;d=4;e=4;");
  EXPECT_EQ(queued(), 2u);  // b and d; a, c and e were fresh
  {
    // A whole map rolled back by its statement leaves nothing.
    auto u = manager_->Begin({});
    u->BeginStatement();
    SliceWrites m;
    std::vector<std::string_view> f;
    statement({{"z", "9"}}, {}, &m, &f);
    u->PutAll(h, std::move(m), std::move(f));
    u->RollbackStatement();
    EXPECT_FALSE(u->HasWritesIn(slice_->id()));
    ASSERT_TRUE(u->Commit().ok());
  }
  EXPECT_EQ(Scan(manager_->Begin({}).get()), "a=1;b=1;c=1;d=4;e=4;");
}

// A participant applying a prepared commit at T pins collection below T
// until its prepared record's (unsynced) delete returned: a pass meanwhile
// keeps every version a second apply of T could bring back alongside.
TEST_F(TransactionTest, CollectionPinKeepsVersionsFromItsTimestampOn) {
  auto w = manager_->Begin({});
  w->Put(slice_->id(), "k", "1");
  ASSERT_TRUE(w->Commit().ok());
  const uint64_t first = manager_->oracle()->ReadTimestamp();
  manager_->PinCollection(first + 1);  // the next commit's timestamp or below
  auto t = manager_->Begin({});
  t->Put(slice_->id(), "k", "2");
  ASSERT_TRUE(t->Commit().ok());
  manager_->TEST_CollectGarbage();
  EXPECT_EQ(slice_->GetStats().rows, 2u);  // "1" is the newest at or below the pinned horizon
  manager_->UnpinCollection(first + 1);
  manager_->TEST_CollectGarbage();
  EXPECT_EQ(slice_->GetStats().rows, 1u);
}

}  // namespace
}  // namespace shale::txn

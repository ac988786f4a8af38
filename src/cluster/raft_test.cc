// RaftNode over a simulated network: many randomized seeds with message
// loss, delay (hence reordering), partitions and crash/restart from storage.
// Every step checks election safety, log matching, leader completeness and
// state-machine safety (raft.h, Invariants).
#include "src/cluster/raft.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "src/cluster/raft_storage.h"
#include "src/common/log.h"
#include "storage/meta_store.h"

namespace shale::cluster::raft {
namespace {

// Elections and step-downs are logged at info; keep test output readable.
const bool kQuietLogs = (log::SetLevel(log::Level::kError), true);

// Records what a node applied; snapshots are the applied list as text.
class RecordingStateMachine final : public StateMachine {
 public:
  // `global` maps index -> (term, data) applied by anyone (state-machine safety).
  explicit RecordingStateMachine(std::map<uint64_t, std::pair<uint64_t, std::string>>* global) : global_(global) {}
  void Apply(const LogEntry& e) override {
    EXPECT_EQ(e.index, last_ + 1) << "applied out of order";
    last_ = e.index;
    std::string data = e.type == EntryType::kNormal ? e.data : "";
    auto [it, inserted] = global_->emplace(e.index, std::make_pair(e.term, data));
    EXPECT_TRUE(it->second.first == e.term && it->second.second == data)
        << "state-machine safety: index " << e.index << " applied as term " << e.term << " '" << data
        << "' and elsewhere as term " << it->second.first << " '" << it->second.second << "'";
    if (e.type == EntryType::kNormal) values_.push_back(e.data);
  }
  std::string TakeSnapshot() override {
    std::string out = std::to_string(last_) + "\n";
    for (const std::string& v : values_) out += v + "\n";
    return out;
  }
  void Restore(const Snapshot& s) override {
    std::istringstream in(s.data);
    std::string line;
    std::getline(in, line);
    last_ = std::stoull(line);
    EXPECT_EQ(last_, s.last_index);
    values_.clear();
    while (std::getline(in, line)) values_.push_back(line);
  }
  const std::vector<std::string>& values() const { return values_; }
  uint64_t last() const { return last_; }

 private:
  std::map<uint64_t, std::pair<uint64_t, std::string>>* global_;
  uint64_t last_ = 0;
  std::vector<std::string> values_;
};

struct SimOptions {
  int nodes = 3;
  uint64_t seed = 1;
  double drop = 0.0;          // probability a message is lost
  uint64_t max_delay_ms = 5;  // uniform delay in [1, max], so messages reorder
  uint64_t snapshot_threshold = 1000;
  bool pre_vote = true;
};

class Sim {
 public:
  explicit Sim(SimOptions o) : o_(o), rng_(o.seed) {
    Config config;
    for (int i = 0; i < o.nodes; ++i) {
      NodeId id = "n" + std::to_string(i + 1);
      ids_.push_back(id);
      config.voters.push_back(Member{id, id, id + ":1", id + ":2"});
    }
    for (const NodeId& id : ids_) {
      storage_[id] = std::make_unique<MemoryRaftStorage>();
      // Everyone starts from the same bootstrap config (as if seeded).
      RaftNode boot(Options(id), storage_[id].get(), nullptr, [](Message) {});
      EXPECT_TRUE(boot.Bootstrap(config).ok());
      Start(id);
    }
  }

  RaftOptions Options(const NodeId& id) {
    RaftOptions ro;
    ro.id = id;
    ro.election_timeout_ms = 100;
    ro.heartbeat_interval_ms = 20;
    ro.snapshot_threshold = o_.snapshot_threshold;
    ro.max_entries_per_append = 8;
    ro.pre_vote = o_.pre_vote;
    ro.seed = rng_();
    return ro;
  }

  // Adds a node with empty storage (it must be added by a config change).
  void AddEmptyNode(const NodeId& id) {
    ids_.push_back(id);
    storage_[id] = std::make_unique<MemoryRaftStorage>();
    Start(id);
  }

  void Start(const NodeId& id) {
    sm_[id] = std::make_unique<RecordingStateMachine>(&applied_);
    nodes_[id] = std::make_unique<RaftNode>(Options(id), storage_[id].get(), sm_[id].get(),
                                            [this](Message m) { Enqueue(std::move(m)); });
    ASSERT_TRUE(nodes_[id]->Open(now_).ok());
  }
  void Crash(const NodeId& id) {
    nodes_.erase(id);
    sm_.erase(id);
  }
  bool Up(const NodeId& id) const { return nodes_.count(id) != 0; }

  void Partition(const std::set<NodeId>& side) { side_ = side; }
  void Heal() { side_.clear(); }
  bool Connected(const NodeId& a, const NodeId& b) const {
    if (side_.empty()) return true;
    return side_.count(a) == side_.count(b);
  }

  void Enqueue(Message m) {
    if (std::uniform_real_distribution<double>(0, 1)(rng_) < o_.drop) return;
    uint64_t at = now_ + std::uniform_int_distribution<uint64_t>(1, o_.max_delay_ms)(rng_);
    queue_.emplace(at, seq_++, std::move(m));
  }

  // Advances time by 1 ms: delivers due messages, ticks every live node,
  // checks the invariants.
  void Step() {
    ++now_;
    while (!queue_.empty() && std::get<0>(*queue_.begin()) <= now_) {
      auto node = queue_.extract(queue_.begin());
      Message& m = std::get<2>(node.value());
      // Messages of a crashed sender still arrive: it made them durable first.
      if (!Up(m.to) || !Connected(m.from, m.to)) continue;
      nodes_[m.to]->Step(m);
    }
    for (auto& [id, n] : nodes_) n->Tick(now_);
    Check();
  }
  void Run(uint64_t ms) {
    for (uint64_t i = 0; i < ms && !::testing::Test::HasFailure(); ++i) Step();
  }

  RaftNode* Leader() {
    RaftNode* best = nullptr;
    for (auto& [id, n] : nodes_) {
      if (n->role() == Role::kLeader && (best == nullptr || n->term() > best->term())) best = n.get();
    }
    return best;
  }
  RaftNode* node(const NodeId& id) { return nodes_.count(id) ? nodes_[id].get() : nullptr; }
  RecordingStateMachine* sm(const NodeId& id) { return sm_[id].get(); }
  const std::vector<NodeId>& ids() const { return ids_; }
  std::mt19937_64& rng() { return rng_; }
  uint64_t now() const { return now_; }
  const std::map<uint64_t, std::pair<uint64_t, std::string>>& applied() const { return applied_; }

  void Check() {
    for (auto& [id, n] : nodes_) {
      // Election safety.
      if (n->role() == Role::kLeader) {
        auto [it, inserted] = leaders_.emplace(n->term(), id);
        ASSERT_EQ(it->second, id) << "two leaders in term " << n->term();
      }
      // Record committed entries.
      for (uint64_t i = std::max(n->snapshot_index() + 1, committed_floor_[id] + 1); i <= n->commit_index(); ++i) {
        const LogEntry* e = n->EntryAt(i);
        if (e == nullptr) continue;
        auto [it, inserted] = committed_.emplace(i, std::make_pair(e->term, n->term()));
        ASSERT_EQ(it->second.first, e->term) << "committed entry " << i << " differs between nodes";
        it->second.second = std::min(it->second.second, n->term());
      }
      committed_floor_[id] = n->commit_index();
    }
    // Leader completeness: every committed entry is in every current leader's log.
    for (auto& [id, n] : nodes_) {
      if (n->role() != Role::kLeader) continue;
      for (auto it = committed_.upper_bound(n->snapshot_index()); it != committed_.end(); ++it) {
        if (n->term() <= it->second.second) continue;  // only leaders of later terms
        ASSERT_EQ(n->TermAt(it->first), it->second.first)
            << "leader " << id << " (term " << n->term() << ") lacks committed entry " << it->first;
      }
    }
    // Log matching: same index and term => same prefix.
    for (auto& [a, na] : nodes_) {
      for (auto& [b, nb] : nodes_) {
        if (a >= b) continue;
        const uint64_t lo = std::max(na->snapshot_index(), nb->snapshot_index()) + 1;
        const uint64_t hi = std::min(na->last_index(), nb->last_index());
        uint64_t match = 0;
        for (uint64_t i = hi; i >= lo && i > 0; --i) {
          if (na->TermAt(i) == nb->TermAt(i)) {
            match = i;
            break;
          }
        }
        for (uint64_t i = lo; i <= match; ++i) {
          ASSERT_EQ(*na->EntryAt(i), *nb->EntryAt(i)) << "log matching broken at " << i << " between " << a << " and " << b;
        }
      }
    }
  }

 private:
  SimOptions o_;
  std::mt19937_64 rng_;
  uint64_t now_ = 0;
  uint64_t seq_ = 0;
  std::vector<NodeId> ids_;
  std::map<NodeId, std::unique_ptr<MemoryRaftStorage>> storage_;
  std::map<NodeId, std::unique_ptr<RecordingStateMachine>> sm_;
  std::map<NodeId, std::unique_ptr<RaftNode>> nodes_;
  std::set<std::tuple<uint64_t, uint64_t, Message>, bool (*)(const std::tuple<uint64_t, uint64_t, Message>&,
                                                             const std::tuple<uint64_t, uint64_t, Message>&)>
      queue_{[](const auto& x, const auto& y) {
        return std::tie(std::get<0>(x), std::get<1>(x)) < std::tie(std::get<0>(y), std::get<1>(y));
      }};
  std::set<NodeId> side_;
  std::map<uint64_t, NodeId> leaders_;
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> committed_;  // index -> (entry term, term seen committed)
  std::map<NodeId, uint64_t> committed_floor_;
  std::map<uint64_t, std::pair<uint64_t, std::string>> applied_;
};

// Runs until every live node applied at least `index`, or `limit` ms pass.
bool RunUntilApplied(Sim& sim, const std::vector<NodeId>& ids, uint64_t index, uint64_t limit) {
  for (uint64_t t = 0; t < limit; ++t) {
    bool all = true;
    for (const NodeId& id : ids) {
      if (sim.node(id) == nullptr || sim.node(id)->applied_index() < index) all = false;
    }
    if (all) return true;
    sim.Step();
    if (::testing::Test::HasFailure()) return false;
  }
  return false;
}

TEST(RaftTest, ElectsOneLeaderAndReplicates) {
  Sim sim(SimOptions{});
  sim.Run(500);
  RaftNode* leader = sim.Leader();
  ASSERT_NE(leader, nullptr);
  auto index = leader->Propose("x=1");
  ASSERT_TRUE(index.ok());
  ASSERT_TRUE(RunUntilApplied(sim, sim.ids(), *index, 1000));
  for (const NodeId& id : sim.ids()) EXPECT_EQ(sim.sm(id)->values(), std::vector<std::string>{"x=1"});
  for (const NodeId& id : sim.ids()) EXPECT_TRUE(sim.node(id)->HasQuorum()) << id;
}

TEST(RaftTest, SingleVoterElectsItselfAtOnce) {
  MemoryRaftStorage storage;
  std::map<uint64_t, std::pair<uint64_t, std::string>> global;
  RecordingStateMachine sm(&global);
  RaftOptions o;
  o.id = "solo";
  RaftNode n(o, &storage, &sm, [](Message) { ADD_FAILURE() << "a single voter has nobody to talk to"; });
  ASSERT_TRUE(n.Open(0).ok());
  ASSERT_TRUE(n.IsEmpty());
  ASSERT_TRUE(n.Bootstrap(Config{{Member{"solo", "solo", "a", "b"}}}).ok());
  n.Tick(0);
  ASSERT_EQ(n.role(), Role::kLeader);
  EXPECT_TRUE(n.HasQuorum());
  auto idx = n.Propose("v");
  ASSERT_TRUE(idx.ok());
  EXPECT_EQ(n.commit_index(), *idx);
  EXPECT_EQ(sm.values(), std::vector<std::string>{"v"});
  // Restart from storage: the same state comes back and it leads again.
  RecordingStateMachine sm2(&global);
  RaftNode again(o, &storage, &sm2, [](Message) {});
  ASSERT_TRUE(again.Open(5).ok());
  again.Tick(5);
  ASSERT_EQ(again.role(), Role::kLeader);
  EXPECT_GT(again.term(), n.term());
  EXPECT_EQ(sm2.values(), std::vector<std::string>{"v"});
}

TEST(RaftTest, MinoritySideNeverCommits) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    SimOptions so;
    so.nodes = 5;
    so.seed = seed;
    Sim sim(so);
    sim.Run(600);
    RaftNode* leader = sim.Leader();
    ASSERT_NE(leader, nullptr);
    const NodeId old_leader = leader->id();
    // The leader and one follower on one side, three on the other.
    std::set<NodeId> minority{old_leader};
    for (const NodeId& id : sim.ids()) {
      if (id != old_leader) {
        minority.insert(id);
        break;
      }
    }
    sim.Partition(minority);
    uint64_t commit_before = 0;  // the most the minority side knew committed
    for (const NodeId& id : minority) commit_before = std::max(commit_before, sim.node(id)->commit_index());
    auto idx = leader->Propose("lost");
    ASSERT_TRUE(idx.ok());
    sim.Run(1000);
    for (const NodeId& id : minority) {
      EXPECT_LE(sim.node(id)->commit_index(), commit_before) << id << " committed on the minority side";
      EXPECT_FALSE(sim.node(id)->HasQuorum()) << id << " on the minority side claims a quorum";
      EXPECT_NE(sim.node(id)->role(), Role::kLeader) << "cut-off leader did not step down";
    }
    // The majority elected a new leader and commits.
    RaftNode* fresh = sim.Leader();
    ASSERT_NE(fresh, nullptr);
    EXPECT_EQ(minority.count(fresh->id()), 0u);
    auto idx2 = fresh->Propose("kept");
    ASSERT_TRUE(idx2.ok());
    sim.Heal();
    ASSERT_TRUE(RunUntilApplied(sim, sim.ids(), *idx2, 3000));
    for (const auto& [i, v] : sim.applied()) EXPECT_NE(v.second, "lost");
  }
}

TEST(RaftTest, RejoiningNodeDoesNotDisruptLeader) {
  Sim sim(SimOptions{});
  sim.Run(500);
  RaftNode* leader = sim.Leader();
  ASSERT_NE(leader, nullptr);
  const uint64_t term = leader->term();
  NodeId loner;
  for (const NodeId& id : sim.ids()) {
    if (id != leader->id()) loner = id;
  }
  sim.Partition({loner});
  sim.Run(2000);  // the loner times out many times: pre-vote keeps its term
  EXPECT_EQ(sim.node(loner)->term(), term);
  sim.Heal();
  sim.Run(500);
  ASSERT_NE(sim.Leader(), nullptr);
  EXPECT_EQ(sim.Leader()->id(), leader->id());
  EXPECT_EQ(sim.Leader()->term(), term);
}

// The randomized run: proposals, message loss and reordering, partitions,
// crashes and restarts, optional compaction; invariants checked each ms;
// at the end the network heals and every node converges.
void RandomizedRun(uint64_t seed, int nodes, uint64_t snapshot_threshold, double drop) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  SimOptions so;
  so.nodes = nodes;
  so.seed = seed;
  so.drop = drop;
  so.max_delay_ms = 10;
  so.snapshot_threshold = snapshot_threshold;
  Sim sim(so);
  std::mt19937_64& rng = sim.rng();
  int proposals = 0;
  for (int round = 0; round < 40 && !::testing::Test::HasFailure(); ++round) {
    const int event = static_cast<int>(rng() % 10);
    const NodeId victim = sim.ids()[rng() % sim.ids().size()];
    if (event == 0 && sim.Up(victim)) {
      sim.Crash(victim);
    } else if (event == 1) {
      for (const NodeId& id : sim.ids()) {
        if (!sim.Up(id)) sim.Start(id);
      }
    } else if (event == 2) {
      std::set<NodeId> side;
      for (const NodeId& id : sim.ids()) {
        if (rng() % 2) side.insert(id);
      }
      sim.Partition(side);
    } else if (event == 3) {
      sim.Heal();
    }
    for (int k = 0; k < 3; ++k) {
      if (RaftNode* l = sim.Leader(); l != nullptr) {
        if (l->Propose("v" + std::to_string(proposals)).ok()) ++proposals;
      }
      sim.Run(20);
    }
    sim.Run(rng() % 200);
  }
  if (::testing::Test::HasFailure()) return;
  // Heal everything and converge.
  sim.Heal();
  for (const NodeId& id : sim.ids()) {
    if (!sim.Up(id)) sim.Start(id);
  }
  sim.Run(1500);
  RaftNode* leader = sim.Leader();
  ASSERT_NE(leader, nullptr) << "no leader after healing";
  auto last = leader->Propose("final");
  ASSERT_TRUE(last.ok());
  ASSERT_TRUE(RunUntilApplied(sim, sim.ids(), *last, 5000)) << "nodes did not converge";
  const auto& expected = sim.sm(leader->id())->values();
  EXPECT_EQ(expected.back(), "final");
  for (const NodeId& id : sim.ids()) EXPECT_EQ(sim.sm(id)->values(), expected) << id;
}

// Seeds per randomized test: SHALE_RAFT_SEEDS=n runs n instead of the
// default (a longer soak than ctest's).
uint64_t Seeds(uint64_t default_count) {
  const char* env = std::getenv("SHALE_RAFT_SEEDS");
  return env != nullptr ? std::strtoull(env, nullptr, 10) : default_count;
}

TEST(RaftTest, RandomizedThreeNodes) {
  for (uint64_t seed = 1; seed <= Seeds(30); ++seed) RandomizedRun(seed, 3, 1000, 0.05);
}

TEST(RaftTest, RandomizedFiveNodesLossy) {
  for (uint64_t seed = 100000; seed < 100000 + Seeds(20); ++seed) RandomizedRun(seed, 5, 1000, 0.2);
}

TEST(RaftTest, RandomizedWithSnapshots) {
  for (uint64_t seed = 200000; seed < 200000 + Seeds(30); ++seed) RandomizedRun(seed, 3, 5, 0.1);
}

TEST(RaftTest, MembershipAddAndRemoveOneAtATime) {
  SimOptions so;
  so.nodes = 1;
  so.snapshot_threshold = 4;  // new nodes catch up through InstallSnapshot
  Sim sim(so);
  sim.Run(10);
  RaftNode* leader = sim.Leader();
  ASSERT_NE(leader, nullptr);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(leader->Propose("a" + std::to_string(i)).ok());
  sim.Run(10);
  for (const NodeId id : {"n2", "n3"}) {
    sim.AddEmptyNode(id);
    leader = sim.Leader();
    auto idx = leader->ProposeConfigChange(Member{id, id, id + ":1", id + ":2"}, false);
    ASSERT_TRUE(idx.ok()) << idx.status().ToString();
    // A second change while the first is in progress is refused.
    EXPECT_FALSE(leader->ProposeConfigChange(Member{"n9", "n9", "", ""}, false).ok());
    ASSERT_TRUE(RunUntilApplied(sim, {"n1", id}, *idx, 3000));
  }
  leader = sim.Leader();
  ASSERT_NE(leader, nullptr);
  EXPECT_EQ(leader->config().voters.size(), 3u);
  auto idx = leader->Propose("b");
  ASSERT_TRUE(idx.ok());
  ASSERT_TRUE(RunUntilApplied(sim, sim.ids(), *idx, 3000));
  for (const NodeId& id : sim.ids()) EXPECT_EQ(sim.sm(id)->values().size(), 11u) << id;

  // Remove the leader itself: it steps down once the change commits and the
  // other two carry on.
  const NodeId old = leader->id();
  auto rm = leader->ProposeConfigChange(Member{old, "", "", ""}, true);
  ASSERT_TRUE(rm.ok());
  sim.Run(2000);
  RaftNode* fresh = sim.Leader();
  ASSERT_NE(fresh, nullptr);
  EXPECT_NE(fresh->id(), old);
  EXPECT_EQ(fresh->config().voters.size(), 2u);
  EXPECT_NE(sim.node(old)->role(), Role::kLeader);
  auto idx3 = fresh->Propose("c");
  ASSERT_TRUE(idx3.ok());
  std::vector<NodeId> rest;
  for (const NodeId& id : sim.ids()) {
    if (id != old) rest.push_back(id);
  }
  ASSERT_TRUE(RunUntilApplied(sim, rest, *idx3, 3000));
  // The removed node does not campaign and never becomes leader.
  sim.Run(2000);
  EXPECT_NE(sim.node(old)->role(), Role::kLeader);
}

TEST(RaftTest, CrashRestartKeepsVoteAndLog) {
  Sim sim(SimOptions{});
  sim.Run(500);
  RaftNode* leader = sim.Leader();
  ASSERT_NE(leader, nullptr);
  auto idx = leader->Propose("durable");
  ASSERT_TRUE(idx.ok());
  ASSERT_TRUE(RunUntilApplied(sim, sim.ids(), *idx, 1000));
  const uint64_t term = leader->term();
  for (const NodeId& id : sim.ids()) sim.Crash(id);
  for (const NodeId& id : sim.ids()) {
    sim.Start(id);
    EXPECT_EQ(sim.node(id)->term(), term);
    EXPECT_GE(sim.node(id)->last_index(), *idx);
  }
  sim.Run(1000);
  leader = sim.Leader();
  ASSERT_NE(leader, nullptr);
  auto idx2 = leader->Propose("after");
  ASSERT_TRUE(idx2.ok());
  ASSERT_TRUE(RunUntilApplied(sim, sim.ids(), *idx2, 2000));
  for (const NodeId& id : sim.ids()) {
    EXPECT_EQ(sim.sm(id)->values(), (std::vector<std::string>{"durable", "after"}));
  }
}

TEST(RaftStorageTest, RocksDbKeepsTermVoteLogAndSnapshotAcrossRestart) {
  const std::string dir = ::testing::TempDir() + "/raft_storage_" + std::to_string(std::random_device{}());
  std::map<uint64_t, std::pair<uint64_t, std::string>> global;
  RaftOptions o;
  o.id = "solo";
  o.snapshot_threshold = 3;
  uint64_t term = 0;
  {
    auto store = storage::MetaStore::Open(dir);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    MetaStoreRaftStorage rs(store->get());
    RecordingStateMachine sm(&global);
    RaftNode n(o, &rs, &sm, [](Message) {});
    ASSERT_TRUE(n.Open(0).ok());
    ASSERT_TRUE(n.Bootstrap(Config{{Member{"solo", "solo", "a:1", "a:2"}}}).ok());
    n.Tick(0);
    ASSERT_EQ(n.role(), Role::kLeader);
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(n.Propose("v" + std::to_string(i)).ok());
    EXPECT_GT(n.snapshot_index(), 0u);  // compacted past the threshold
    term = n.term();
  }
  auto store = storage::MetaStore::Open(dir);
  ASSERT_TRUE(store.ok());
  MetaStoreRaftStorage rs(store->get());
  HardState hs;
  Snapshot snap;
  std::vector<LogEntry> log;
  ASSERT_TRUE(rs.Load(&hs, &snap, &log).ok());
  EXPECT_EQ(hs.term, term);
  EXPECT_EQ(hs.vote, "solo");
  EXPECT_GT(snap.last_index, 0u);
  EXPECT_EQ(snap.config.voters.size(), 1u);
  for (size_t i = 0; i < log.size(); ++i) EXPECT_EQ(log[i].index, snap.last_index + 1 + i);
  RecordingStateMachine sm(&global);
  RaftNode again(o, &rs, &sm, [](Message) {});
  ASSERT_TRUE(again.Open(10).ok());
  again.Tick(10);
  ASSERT_EQ(again.role(), Role::kLeader);
  EXPECT_EQ(sm.values(), (std::vector<std::string>{"v0", "v1", "v2", "v3", "v4"}));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace shale::cluster::raft

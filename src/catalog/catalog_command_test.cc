// The catalog and accounts as a replicated state machine: several nodes'
// catalogs fed the same command log (as the Raft metadata log feeds them in
// shaled) stay identical, conflicting commands fail alike everywhere, a
// restart re-applies only what is not yet in the MetaStore, and a snapshot
// rebuilds a node's catalog and accounts.
#include "src/catalog/catalog_command.h"

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "src/catalog/catalog.pb.h"
#include "src/common/testing/temp_dir.h"
#include "storage/meta_store.h"

namespace shale::catalog {
namespace {

// One node: its MetaStore, catalog and accounts, and what its table
// listener was told.
struct Node {
  std::string dir;
  std::unique_ptr<storage::MetaStore> meta;
  std::unique_ptr<Catalog> catalog;
  std::unique_ptr<Accounts> accounts;
  std::vector<std::string> events;  // "+db.t" created, "-db.t" dropped, "~db.t" changed (kDone)
  std::set<uint64_t> prepared;      // tables told kPrepare
};

// Nodes sharing one ordered command log: Submit appends a command and
// applies it on every node in log order; the submitter gets its own node's
// result, as ClusterNode::ProposeCatalog returns it.
class ReplicatedCatalogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 3; ++i) AddNode();
  }

  Node& AddNode() {
    auto n = std::make_unique<Node>();
    n->dir = dir_.path() + "/node" + std::to_string(nodes_.size());
    Node& node = *n;
    nodes_.push_back(std::move(n));
    Open(node);
    return node;
  }

  void Open(Node& node) {
    node.accounts.reset();
    node.catalog.reset();
    node.meta.reset();
    auto meta = storage::MetaStore::Open(node.dir);
    ASSERT_TRUE(meta.ok()) << meta.status().ToString();
    node.meta = std::move(meta).value();
    auto cat = Catalog::Load(node.meta.get());
    ASSERT_TRUE(cat.ok()) << cat.status().ToString();
    node.catalog = std::move(cat).value();
    auto acc = Accounts::Load(node.meta.get());
    ASSERT_TRUE(acc.ok()) << acc.status().ToString();
    node.accounts = std::move(acc).value();
    Node* self = &node;
    node.catalog->SetTableListener([self](TableChangePhase phase, const TableDef* before, const TableDef* after) {
      if (phase == TableChangePhase::kPrepare) {
        self->prepared.insert(after ? after->id : before->id);
        return;
      }
      const TableDef* t = after ? after : before;
      self->events.push_back((before == nullptr ? "+" : after == nullptr ? "-" : "~") + t->db + "." + t->name);
    });
    auto submit = [this, self](const std::string& command) { return Submit(self, command); };
    node.catalog->SetSubmitter(submit);
    node.accounts->SetSubmitter(submit);
  }

  CommandResult Submit(Node* from, const std::string& command) {
    log_.push_back(command);
    const uint64_t index = log_.size();
    for (auto& n : nodes_) {
      if (n->catalog != nullptr) CatchUp(*n);  // a node that is down catches up later
    }
    EXPECT_EQ(applied_[from], index);
    return last_result_[from];
  }

  // Applies every log entry the node has not applied yet.
  void CatchUp(Node& n) {
    while (applied_[&n] < log_.size()) {
      const uint64_t index = ++applied_[&n];
      last_result_[&n] = ApplyCatalogCommand(n.catalog.get(), n.accounts.get(), log_[index - 1], index);
    }
  }

  TableDef MakeTable(Node& n, const std::string& db, const std::string& name) {
    TableDef t;
    t.id = *n.catalog->NextId();
    t.db = db;
    t.name = name;
    t.columns.push_back({"id", SqlType::Int(), false, std::nullopt});
    t.primary.name = "PRIMARY";
    t.primary.key_columns = {0};
    for (int i = 0; i < 3; ++i) {
      SliceDef s;
      s.id = *n.catalog->NextId();
      s.hash_begin = i == 0 ? 0 : (UINT64_MAX / 3) * static_cast<uint64_t>(i) + 1;
      s.hash_end = i == 2 ? UINT64_MAX : (UINT64_MAX / 3) * static_cast<uint64_t>(i + 1);
      s.replicas = {"node" + std::to_string(i % 3 + 1), "node" + std::to_string((i + 1) % 3 + 1)};
      t.primary.slices.push_back(s);
    }
    return t;
  }

  std::string State(Node& n) {
    pb::State s;
    s.ParseFromString(SnapshotCatalogState(*n.catalog, *n.accounts));
    s.clear_applied_index();
    return s.SerializeAsString();
  }

  testing::TempDir dir_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::string> log_;
  std::map<Node*, uint64_t> applied_;
  std::map<Node*, CommandResult> last_result_;
};

TEST_F(ReplicatedCatalogTest, EveryNodeAppliesTheSameChanges) {
  Node& a = *nodes_[0];
  Node& b = *nodes_[1];
  bool created = false;
  ASSERT_TRUE(a.catalog->CreateDatabase("d", false, &created).ok());
  EXPECT_TRUE(created);
  ASSERT_TRUE(b.catalog->CreateTable(MakeTable(b, "d", "t"), false, &created).ok());
  ASSERT_TRUE(a.catalog->CreateTable(MakeTable(a, "d", "u"), false, &created).ok());
  ASSERT_TRUE(nodes_[2]->catalog->RenameTable("d", "u", "d", "v").ok());
  auto t = a.catalog->GetTable("d", "t");
  ASSERT_TRUE(t.ok());
  TableDef changed = **t;
  changed.columns.push_back({"x", SqlType::BigInt(), true, std::nullopt});
  ASSERT_TRUE(b.catalog->ReplaceTable(*t, changed).ok());
  // Computed from the old version: refused everywhere.
  EXPECT_EQ(a.catalog->ReplaceTable(*t, changed).mysql_code(), 1412);
  for (auto& n : nodes_) {
    EXPECT_EQ(State(*n), State(a));
    EXPECT_EQ(*n->catalog->ListTables("d"), (std::vector<std::string>{"t", "v"}));
    EXPECT_EQ((*n->catalog->GetTable("d", "t"))->columns.size(), 2u);
    EXPECT_EQ(n->events, (std::vector<std::string>{"+d.t", "+d.u", "~d.v", "~d.t"}));
  }
}

TEST_F(ReplicatedCatalogTest, ConflictingCreatesHaveOneWinner) {
  Node& a = *nodes_[0];
  Node& b = *nodes_[1];
  bool created = false;
  ASSERT_TRUE(a.catalog->CreateDatabase("d", false, &created).ok());
  // Both nodes checked that t is absent; their commands reach the log in
  // turn and the second fails with 1050 on every node.
  TableDef ta = MakeTable(a, "d", "t");
  TableDef tb = MakeTable(b, "d", "t");
  EXPECT_TRUE(a.catalog->CreateTable(ta, false, &created).ok());
  EXPECT_EQ(b.catalog->CreateTable(tb, false, &created).mysql_code(), 1050);
  EXPECT_EQ(b.catalog->CreateDatabase("d", false, &created).mysql_code(), 1007);
  for (auto& n : nodes_) EXPECT_EQ((*n->catalog->GetTable("d", "t"))->id, ta.id);
  // The same with IF NOT EXISTS: no error, nothing created.
  EXPECT_TRUE(b.catalog->CreateTable(tb, true, &created).ok());
  EXPECT_FALSE(created);
  EXPECT_EQ(b.catalog->DropTable("d", "nope").mysql_code(), 1051);
}

TEST_F(ReplicatedCatalogTest, IdsAreUniqueAcrossNodes) {
  std::set<int64_t> seen;
  for (int round = 0; round < 40; ++round) {
    Node& n = *nodes_[static_cast<size_t>(round) % 3];
    auto id = n.catalog->NextId();
    ASSERT_TRUE(id.ok());
    EXPECT_TRUE(seen.insert(static_cast<int64_t>(*id)).second) << *id;
    auto rows = n.catalog->AllocateRowIds(7, 3);
    ASSERT_TRUE(rows.ok());
    for (int64_t r = *rows; r < *rows + 3; ++r) EXPECT_TRUE(seen.insert(-r).second) << "row id " << r;
    auto ai = n.catalog->ReserveIds(7, "auto_increment", 2, 100);
    ASSERT_TRUE(ai.ok());
    EXPECT_GE(*ai, 100);
    EXPECT_TRUE(seen.insert(1000000 + *ai).second && seen.insert(1000000 + *ai + 1).second) << *ai;
  }
  EXPECT_FALSE(nodes_[0]->catalog->ReserveIds(7, "", 1).ok());
  EXPECT_FALSE(nodes_[0]->catalog->ReserveIds(7, "row_id", 0).ok());
}

TEST_F(ReplicatedCatalogTest, AutoIncrementCountersAcrossNodes) {
  constexpr IdCounter kAuto = IdCounter::kAutoIncrement;
  Node& a = *nodes_[0];
  Node& b = *nodes_[1];
  // Each node reserves its own batch: ids interleave but never repeat.
  std::set<int64_t> seen;
  for (int i = 0; i < 5; ++i) {
    for (Node* n : {&a, &b}) {
      auto id = n->catalog->ReserveIds(9, kAuto, 1);
      ASSERT_TRUE(id.ok());
      EXPECT_TRUE(seen.insert(*id).second) << *id;
    }
  }
  // An explicit value on one node moves the counter for every node's next
  // batch; no node hands out an id at or below it from a new batch.
  ASSERT_TRUE(a.catalog->AdvanceIds(9, kAuto, 1000000).ok());
  auto after = a.catalog->ReserveIds(9, kAuto, 1);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(*after, 1000000);
  // A reset (TRUNCATE) on node a makes node b drop its cached batch too.
  ASSERT_TRUE(a.catalog->SetNextId(9, kAuto, 1).ok());
  for (Node* n : {&a, &b}) {
    auto first = n->catalog->ReserveIds(9, kAuto, 1);
    ASSERT_TRUE(first.ok());
    EXPECT_LT(*first, 1000000) << "a node kept ids from before the reset";
  }
  // Giving back an unused batch is compare-and-set: node a reserved after
  // node b, so b's give-back must not lower the counter under a's batch.
  auto b_next = b.catalog->ReserveIds(9, kAuto, 1);
  ASSERT_TRUE(b_next.ok());
  ASSERT_TRUE(a.catalog->SetNextId(9, kAuto, 5000).ok());
  ASSERT_TRUE(b.catalog->ReserveIds(9, kAuto, 1).ok());  // b: a new batch from 5000
  auto a_id = a.catalog->ReserveIds(9, kAuto, 1);        // a: the batch after b's
  ASSERT_TRUE(a_id.ok());
  ASSERT_TRUE(b.catalog->ReleaseUnusedIds().ok());
  auto next = a.catalog->PeekNextId(9, kAuto);
  ASSERT_TRUE(next.ok());
  EXPECT_GT(*next, *a_id);
  auto c_id = nodes_[2]->catalog->ReserveIds(9, kAuto, 1);
  ASSERT_TRUE(c_id.ok());
  EXPECT_GT(*c_id, *a_id) << "node b's give-back lowered the counter under node a's batch";
}

TEST_F(ReplicatedCatalogTest, AccountsReplicate) {
  Account u;
  u.user = "u";
  u.host = "%";
  u.plugin = "mysql_native_password";
  bool existed = true;
  ASSERT_TRUE(nodes_[1]->accounts->Create(u, &existed).ok());
  EXPECT_FALSE(existed);
  ASSERT_TRUE(nodes_[1]->accounts->Create(u, &existed).ok());
  EXPECT_TRUE(existed);
  ASSERT_TRUE(*nodes_[2]->accounts->Change("u", "%", "d", "", kPrivSelect, false, true));
  ASSERT_TRUE(*nodes_[0]->accounts->SetCredential("u", "%", "mysql_native_password", "cred"));
  for (auto& n : nodes_) {
    auto a = n->accounts->Find("u", "%");
    ASSERT_TRUE(a.has_value());
    EXPECT_EQ(a->credential, "cred");
    EXPECT_EQ(a->PrivilegesOn("d", ""), kPrivSelect);
  }
  EXPECT_TRUE(*nodes_[0]->accounts->Drop("u", "%"));
  EXPECT_FALSE(*nodes_[0]->accounts->Drop("u", "%"));
  for (auto& n : nodes_) EXPECT_FALSE(n->accounts->Find("u", "%").has_value());
}

TEST_F(ReplicatedCatalogTest, RestartReappliesOnlyNewEntries) {
  Node& a = *nodes_[0];
  bool created = false;
  ASSERT_TRUE(a.catalog->CreateDatabase("d", false, &created).ok());
  ASSERT_TRUE(a.catalog->CreateTable(MakeTable(a, "d", "t"), false, &created).ok());
  ASSERT_TRUE(a.catalog->DropTable("d", "t").ok());
  ASSERT_TRUE(a.catalog->CreateTable(MakeTable(a, "d", "t"), false, &created).ok());
  const std::string before = State(a);
  const uint64_t t_id = (*a.catalog->GetTable("d", "t"))->id;
  // Restart: the MetaStore has everything; Raft replays the whole log
  // (nothing was snapshotted) and every entry is skipped.
  Open(a);
  EXPECT_EQ(a.catalog->loaded_applied_index(), log_.size());
  applied_[&a] = 0;
  CatchUp(a);
  EXPECT_EQ(State(a), before);
  EXPECT_EQ((*a.catalog->GetTable("d", "t"))->id, t_id);
  // A node that was down for some entries catches up from its index.
  Node& c = *nodes_[2];
  const size_t down_at = log_.size();
  c.accounts.reset();
  c.catalog.reset();
  ASSERT_TRUE(a.catalog->CreateTable(MakeTable(a, "d", "later"), false, &created).ok());
  ASSERT_TRUE(a.catalog->DropTable("d", "t").ok());
  Open(c);
  EXPECT_EQ(c.catalog->loaded_applied_index(), down_at);
  EXPECT_GT(log_.size(), down_at + 1);
  CatchUp(c);
  EXPECT_EQ(State(c), State(a));
  EXPECT_EQ(*c.catalog->ListTables("d"), std::vector<std::string>{"later"});
}

TEST_F(ReplicatedCatalogTest, SnapshotRebuildsANode) {
  Node& a = *nodes_[0];
  bool created = false;
  ASSERT_TRUE(a.catalog->CreateDatabase("d", false, &created).ok());
  ASSERT_TRUE(a.catalog->CreateDatabase("e", false, &created).ok());
  ASSERT_TRUE(a.catalog->CreateTable(MakeTable(a, "d", "t"), false, &created).ok());
  ASSERT_TRUE(a.catalog->CreateTable(MakeTable(a, "e", "gone"), false, &created).ok());
  ASSERT_TRUE(*a.catalog->AllocateRowIds((*a.catalog->GetTable("d", "t"))->id, 5) >= 1);
  Account u;
  u.user = "snap";
  u.host = "localhost";
  bool existed = false;
  ASSERT_TRUE(a.accounts->Create(u, &existed).ok());
  const std::string state = SnapshotCatalogState(*a.catalog, *a.accounts);

  // A fresh node with a different catalog of its own gets the snapshot.
  Node& fresh = AddNode();
  ASSERT_TRUE(fresh.catalog->ApplyCommand([] {
    pb::Command cmd;
    cmd.mutable_create_database()->set_name("stale");
    return cmd.SerializeAsString();
  }(), 0).status.ok());
  ASSERT_TRUE(RestoreCatalogState(fresh.catalog.get(), fresh.accounts.get(), state, log_.size()).ok());
  EXPECT_EQ(State(fresh), State(a));
  EXPECT_FALSE(fresh.catalog->DatabaseExists("stale"));
  EXPECT_TRUE(fresh.accounts->Find("snap", "localhost").has_value());
  EXPECT_EQ(fresh.events, (std::vector<std::string>{"+d.t", "+e.gone"}));
  // A node restarted on it keeps it, and a snapshot older than what the
  // MetaStore holds is not installed again.
  Open(fresh);
  EXPECT_EQ(State(fresh), State(a));
  ASSERT_TRUE(RestoreCatalogState(fresh.catalog.get(), fresh.accounts.get(), "garbage", log_.size()).ok());
  EXPECT_EQ(State(fresh), State(a));
  // Row ids reserved before the snapshot are not handed out again.
  auto next = fresh.catalog->ReserveIds((*fresh.catalog->GetTable("d", "t"))->id, "row_id", 1);
  ASSERT_TRUE(next.ok());
  EXPECT_GT(*next, kRowIdBatch);
}

TEST_F(ReplicatedCatalogTest, RemovedNodeLeavesEverySlice) {
  Node& a = *nodes_[0];
  bool created = false;
  ASSERT_TRUE(a.catalog->CreateDatabase("d", false, &created).ok());
  ASSERT_TRUE(a.catalog->CreateTable(MakeTable(a, "d", "t"), false, &created).ok());
  pb::Command cmd;
  cmd.mutable_remove_node_replicas()->set_node("node2");
  CommandResult r = Submit(&a, cmd.SerializeAsString());
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.value, 2);  // node2 held two of the three slices
  for (auto& n : nodes_) {
    auto t = *n->catalog->GetTable("d", "t");
    for (const SliceDef& s : t->primary.slices) {
      EXPECT_EQ(std::count(s.replicas.begin(), s.replicas.end(), "node2"), 0);
      EXPECT_FALSE(s.replicas.empty());
    }
    // Slice 1 (node2, node3) is now ranked by node3; slice 0 keeps node1.
    EXPECT_EQ(t->primary.slices[0].replicas, (std::vector<std::string>{"node1"}));
    EXPECT_EQ(t->primary.slices[1].replicas, (std::vector<std::string>{"node3"}));
    EXPECT_EQ(n->events.back(), "~d.t");
  }
}

// Slices of MakeTable: 0 on (node1, node2), 1 on (node2, node3), 2 on
// (node3, node1).
RebalanceTaskDef Task(uint64_t id, const TableDef& t, int slice, const std::string& source,
                      const std::string& target, const std::string& drop_from = {}) {
  RebalanceTaskDef task;
  task.id = id;
  task.kind = drop_from.empty() ? "reprotect" : "rebalance";
  task.table_id = t.id;
  task.slice_id = t.primary.slices[slice].id;
  task.source = source;
  task.target = target;
  task.drop_from = drop_from;
  task.started_ms = 1000;
  return task;
}

TEST_F(ReplicatedCatalogTest, BuildingReplicaIsAddedPromotedAndRecordedEverywhere) {
  Node& a = *nodes_[0];
  bool created = false;
  ASSERT_TRUE(a.catalog->CreateDatabase("d", false, &created).ok());
  ASSERT_TRUE(a.catalog->CreateTable(MakeTable(a, "d", "t"), false, &created).ok());
  pb::Command remove;
  remove.mutable_remove_node_replicas()->set_node("node2");
  ASSERT_TRUE(Submit(&a, remove.SerializeAsString()).status.ok());
  auto t = *a.catalog->GetTable("d", "t");
  const uint64_t id = *a.catalog->NextId();
  for (auto& n : nodes_) n->prepared.clear();
  ASSERT_TRUE(a.catalog->AddBuildingReplica(Task(id, *t, 0, "node1", "node3")).ok());
  for (auto& n : nodes_) {
    auto now = *n->catalog->GetTable("d", "t");
    const SliceDef& s = now->primary.slices[0];
    EXPECT_EQ(s.replicas, (std::vector<std::string>{"node1"}));
    ASSERT_EQ(s.building.size(), 1u);
    EXPECT_EQ(s.building[0], (BuildingReplica{"node3", id, "node1", 1000}));
    // Writes reach the building replica; reads rank node1.
    EXPECT_EQ(s.WriteReplicas(), (std::vector<std::string>{"node1", "node3"}));
    EXPECT_TRUE(s.PlacedOn("node3"));
    EXPECT_EQ(now->version, t->version + 1);
    // Told before the change is written, so node3 can create its slice.
    EXPECT_TRUE(n->prepared.count(now->id));
    auto tasks = n->catalog->RebalanceTasks();
    ASSERT_EQ(tasks.size(), 1u);
    EXPECT_EQ(tasks[0].state, "copying");
    EXPECT_EQ(tasks[0].representation, "PRIMARY");
    EXPECT_EQ(tasks[0].db, "d");
  }
  ASSERT_TRUE(a.catalog->PromoteReplica(t->id, t->primary.slices[0].id, id, 12345, 2000).ok());
  for (auto& n : nodes_) {
    auto now = *n->catalog->GetTable("d", "t");
    const SliceDef& s = now->primary.slices[0];
    EXPECT_EQ(s.replicas, (std::vector<std::string>{"node1", "node3"}));
    EXPECT_TRUE(s.building.empty());
    EXPECT_EQ(s.WriteReplicas(), s.replicas);
    auto tasks = n->catalog->RebalanceTasks();
    ASSERT_EQ(tasks.size(), 1u);
    EXPECT_EQ(tasks[0].state, "finished");
    EXPECT_EQ(tasks[0].bytes, 12345u);
    EXPECT_EQ(tasks[0].finished_ms, 2000);
    EXPECT_EQ(State(*n), State(a));
  }
  // A second promotion of the same task fails alike everywhere.
  EXPECT_FALSE(a.catalog->PromoteReplica(t->id, t->primary.slices[0].id, id, 1, 3000).ok());
  // The state survives a restart and goes into snapshots.
  Open(a);
  EXPECT_EQ(a.catalog->RebalanceTasks().size(), 1u);
  EXPECT_EQ((*a.catalog->GetTable("d", "t"))->primary.slices[0].replicas,
            (std::vector<std::string>{"node1", "node3"}));
  Node& fresh = AddNode();
  ASSERT_TRUE(RestoreCatalogState(fresh.catalog.get(), fresh.accounts.get(),
                                  SnapshotCatalogState(*a.catalog, *a.accounts), log_.size())
                  .ok());
  EXPECT_EQ(State(fresh), State(a));
}

TEST_F(ReplicatedCatalogTest, BadRebalanceCommandsChangeNothing) {
  Node& a = *nodes_[0];
  bool created = false;
  ASSERT_TRUE(a.catalog->CreateDatabase("d", false, &created).ok());
  ASSERT_TRUE(a.catalog->CreateTable(MakeTable(a, "d", "t"), false, &created).ok());
  auto t = *a.catalog->GetTable("d", "t");
  const std::string before = State(a);
  // The target already holds a replica; the source does not serve; no such
  // slice; an unknown task.
  EXPECT_FALSE(a.catalog->AddBuildingReplica(Task(*a.catalog->NextId(), *t, 0, "node1", "node2")).ok());
  EXPECT_FALSE(a.catalog->AddBuildingReplica(Task(*a.catalog->NextId(), *t, 0, "node3", "node4")).ok());
  RebalanceTaskDef missing = Task(*a.catalog->NextId(), *t, 0, "node1", "node4");
  missing.slice_id = 999999;
  EXPECT_FALSE(a.catalog->AddBuildingReplica(missing).ok());
  EXPECT_FALSE(a.catalog->PromoteReplica(t->id, t->primary.slices[0].id, 77, 0, 0).ok());
  EXPECT_FALSE(a.catalog->CancelTask(t->id, t->primary.slices[0].id, 77, "x", 0).ok());
  pb::State now, then;
  now.ParseFromString(State(a));
  then.ParseFromString(before);
  now.clear_next_id();
  then.clear_next_id();
  EXPECT_EQ(now.SerializeAsString(), then.SerializeAsString());
  for (auto& n : nodes_) EXPECT_TRUE(n->catalog->RebalanceTasks().empty());
}

TEST_F(ReplicatedCatalogTest, RebalanceMoveDropsTheOldReplicaOnPromotion) {
  Node& a = *nodes_[0];
  bool created = false;
  ASSERT_TRUE(a.catalog->CreateDatabase("d", false, &created).ok());
  ASSERT_TRUE(a.catalog->CreateTable(MakeTable(a, "d", "t"), false, &created).ok());
  auto t = *a.catalog->GetTable("d", "t");
  const uint64_t id = *a.catalog->NextId();
  ASSERT_TRUE(a.catalog->AddBuildingReplica(Task(id, *t, 1, "node3", "node4", "node3")).ok());
  ASSERT_TRUE(a.catalog->PromoteReplica(t->id, t->primary.slices[1].id, id, 10, 20).ok());
  for (auto& n : nodes_) {
    auto now = *n->catalog->GetTable("d", "t");
    EXPECT_EQ(now->primary.slices[1].replicas, (std::vector<std::string>{"node2", "node4"}));
    EXPECT_EQ(n->catalog->RebalanceTasks()[0].kind, "rebalance");
  }
}

TEST_F(ReplicatedCatalogTest, NodeLeavingCancelsItsBuildsAndThoseCopiedFromIt) {
  Node& a = *nodes_[0];
  bool created = false;
  ASSERT_TRUE(a.catalog->CreateDatabase("d", false, &created).ok());
  ASSERT_TRUE(a.catalog->CreateTable(MakeTable(a, "d", "t"), false, &created).ok());
  auto t = *a.catalog->GetTable("d", "t");
  const uint64_t to_leaver = *a.catalog->NextId(), from_leaver = *a.catalog->NextId(),
                 other = *a.catalog->NextId();
  ASSERT_TRUE(a.catalog->AddBuildingReplica(Task(to_leaver, *t, 0, "node1", "node4")).ok());
  ASSERT_TRUE(a.catalog->AddBuildingReplica(Task(from_leaver, *t, 1, "node3", "node5")).ok());
  ASSERT_TRUE(a.catalog->AddBuildingReplica(Task(other, *t, 2, "node1", "node6")).ok());
  ASSERT_TRUE(a.catalog->CancelTask(t->id, t->primary.slices[2].id, other, "copy failed", 55).ok());
  pb::Command cmd;
  cmd.mutable_remove_node_replicas()->set_node("node4");
  ASSERT_TRUE(Submit(&a, cmd.SerializeAsString()).status.ok());
  cmd.mutable_remove_node_replicas()->set_node("node3");
  ASSERT_TRUE(Submit(&a, cmd.SerializeAsString()).status.ok());
  for (auto& n : nodes_) {
    auto now = *n->catalog->GetTable("d", "t");
    for (const SliceDef& s : now->primary.slices) EXPECT_TRUE(s.building.empty());
    std::map<uint64_t, RebalanceTaskDef> tasks;
    for (auto& task : n->catalog->RebalanceTasks()) tasks[task.id] = task;
    ASSERT_EQ(tasks.size(), 3u);
    for (uint64_t id : {to_leaver, from_leaver, other}) EXPECT_EQ(tasks[id].state, "cancelled");
    EXPECT_EQ(tasks[other].error, "copy failed");
    EXPECT_EQ(tasks[other].finished_ms, 55);
    EXPECT_NE(tasks[to_leaver].error.find("node4"), std::string::npos);
    EXPECT_NE(tasks[from_leaver].error.find("node3"), std::string::npos);
    EXPECT_EQ(State(*n), State(a));
  }
}

TEST_F(ReplicatedCatalogTest, FinishedTaskHistoryIsBounded) {
  Node& a = *nodes_[0];
  // One node is enough here (two thousand commands).
  for (size_t i = 1; i < nodes_.size(); ++i) {
    nodes_[i]->accounts.reset();
    nodes_[i]->catalog.reset();
  }
  bool created = false;
  ASSERT_TRUE(a.catalog->CreateDatabase("d", false, &created).ok());
  ASSERT_TRUE(a.catalog->CreateTable(MakeTable(a, "d", "t"), false, &created).ok());
  auto t = *a.catalog->GetTable("d", "t");
  uint64_t first = 0;
  for (size_t i = 0; i < kKeptFinishedTasks + 5; ++i) {
    const uint64_t id = *a.catalog->NextId();
    if (i == 0) first = id;
    ASSERT_TRUE(a.catalog->AddBuildingReplica(Task(id, *t, 0, "node1", "node9")).ok());
    ASSERT_TRUE(a.catalog->CancelTask(t->id, t->primary.slices[0].id, id, "x", 1).ok());
  }
  auto tasks = a.catalog->RebalanceTasks();
  EXPECT_EQ(tasks.size(), kKeptFinishedTasks);
  EXPECT_GT(tasks.front().id, first);
  Open(a);
  EXPECT_EQ(a.catalog->RebalanceTasks().size(), kKeptFinishedTasks);
}

}  // namespace
}  // namespace shale::catalog

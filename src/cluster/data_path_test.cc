// The data path across nodes in one process: three exec::Engines, each with
// its own data directory, SliceService and real gRPC server on a loopback
// port; the same table installed in every catalog with its slices' replicas
// placed on different nodes. SQL runs through exec::Session on one node and
// is read back on the others (docs/cluster.md "Data path").
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <set>
#include <map>
#include <thread>
#include <tuple>
#include <utility>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "src/cluster/data.pb.h"
#include "src/cluster/rpc_server.h"
#include "src/cluster/rpc_stats.h"
#include "src/cluster/slice_service.h"
#include "src/cluster/testing/in_process_cluster.h"
#include "src/common/testing/temp_dir.h"
#include "src/common/testing/wait_for.h"
#include "src/exec/engine.h"
#include "src/exec/pushdown.h"
#include "src/exec/session.h"
#include "src/txn/commit/paxos.h"
#include "src/txn/deadlock_detector.h"
#include "storage/mvcc.h"

namespace shale::cluster {
namespace {

// "INSERT INTO d.t VALUES (id_base + i, i), ..." for i in [first, last].
std::string InsertRows(int first, int last, int id_base = 0) {
  std::string insert = "INSERT INTO d.t VALUES ";
  for (int i = first; i <= last; ++i) insert += (i > first ? "," : "") + fmt::format("({}, {})", id_base + i, i);
  return insert;
}

struct TestNode {
  std::string name;
  std::unique_ptr<exec::Engine> engine;
  std::unique_ptr<SliceService> data;
  std::unique_ptr<RpcServer> rpc;
  std::atomic<uint64_t> epoch{0};
  int port = 0;
};

class DataPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    in_process::OpenNodes(dir_.path(), 3, /*default_slices=*/6, &nodes_);
    ASSERT_EQ(nodes_.size(), 3u);
    for (auto& n : nodes_) {
      SliceServiceOptions o;
      o.node_name = n->name;
      TestNode* raw = n.get();
      o.epoch = [raw] { return raw->epoch.load(); };
      o.address_of = [this](const std::string& name) { return AddressOf(name); };
      o.members = [this] { return addresses_.Names(); };
      o.rpc_timeout_ms = 3000;
      o.lock_lease_ms = LockLeaseMs();
      o.resolve_after_ms = 60000;  // tests resolve explicitly
      o.decision_sweep_ms = 0;     // and sweep decision records explicitly
      o.ranks_here = [raw](storage::SliceId id) { return raw->engine->RanksHere(id); };
      o.compile_fragment = CompilerOf(n.get());
      o.fragment_page_rows = FragmentPageRows();
      o.fragment_page_groups = FragmentPageGroups();
      if (WirePlacedHere()) o.placed_here = PlacedHereOf(n.get());
      auto data = SliceService::Open(n->engine->txn(), n->engine->slices(), n->engine->meta(), o);
      ASSERT_TRUE(data.ok()) << data.status().ToString();
      n->data = std::move(data).value();
      n->engine->SetDataRouter(n->data.get());
      StartServer(n.get(), "127.0.0.1:0");
    }
    // The cluster's deadlock detector, on node 1 as on a metadata leader
    // (shaled), over the members as the nodes see them; every test runs
    // with it (none of them may see a false deadlock).
    txn::DeadlockDetectorOptions ddo;
    ddo.members = [this] { return addresses_.Names(); };
    detector_ = std::make_unique<txn::DeadlockDetector>(nodes_[0]->data.get(), ddo);
    detector_->Start();
  }

  void TearDown() override {
    if (detector_) detector_->Stop();
    for (auto& n : nodes_) {
      if (n->rpc) n->rpc->Shutdown();
    }
    for (auto& n : nodes_) n->engine->SetDataRouter(nullptr);
    for (auto& n : nodes_) n->data.reset();
    nodes_.clear();
  }

  virtual uint32_t LockLeaseMs() const { return 60000; }
  // Whether the data paths see which slices their node's applied slice
  // map places on it (SliceServiceOptions::placed_here, as in shaled).
  virtual bool WirePlacedHere() const { return false; }
  static std::function<bool(storage::SliceId)> PlacedHereOf(TestNode* n) {
    return [n](storage::SliceId id) { return n->engine->PlacedHere(id); };
  }
  virtual uint32_t FragmentPageRows() const { return 65536; }
  virtual uint32_t FragmentPageGroups() const { return 4096; }

  // Pushed fragments compile against the node's own catalog (as in shaled).
  static txn::FragmentCompiler CompilerOf(TestNode* n) { return in_process::FragmentCompilerOf(n->engine.get()); }

  void StartServer(TestNode* n, const std::string& address) {
    n->rpc = std::make_unique<RpcServer>(NodeIdentity{NewNodeId(), n->name});
    n->rpc->AddService(n->data->service());
    n->data->RegisterLink(n->rpc->link());
    ASSERT_TRUE(n->rpc->Start(address).ok());
    n->port = n->rpc->port();
    SetAddress(n->name, "127.0.0.1:" + std::to_string(n->port));
  }

  // A participant's crash and restart: its SliceService (and the locks it
  // holds) goes, and is opened again from the node's MetaStore.
  // `before_serving` runs once it is open, before its server starts.
  void RestartDataPath(TestNode* n, const std::function<void()>& before_serving) {
    n->rpc->Shutdown();
    n->engine->SetDataRouter(nullptr);
    n->data.reset();
    EXPECT_EQ(n->engine->txn()->locks()->locks_held(), 0u);
    SliceServiceOptions o;
    o.node_name = n->name;
    o.address_of = [this](const std::string& name) { return AddressOf(name); };
    o.members = [this] { return addresses_.Names(); };
    o.resolve_after_ms = 60000;
    o.decision_sweep_ms = 0;
    o.ranks_here = [n](storage::SliceId id) { return n->engine->RanksHere(id); };
    o.compile_fragment = CompilerOf(n);
    if (WirePlacedHere()) o.placed_here = PlacedHereOf(n);
    auto reopened = SliceService::Open(n->engine->txn(), n->engine->slices(), n->engine->meta(), o);
    ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
    n->data = std::move(reopened).value();
    n->engine->SetDataRouter(n->data.get());
    before_serving();
    StartServer(n, *AddressOf(n->name));
  }

  std::vector<Result<exec::StatementResult>> Exec(exec::Session* s, std::string_view sql) {
    return s->Execute(sql);
  }

  exec::StatementResult Run(exec::Session* s, std::string_view sql) { return in_process::Run(s, sql); }

  Status Fail(exec::Session* s, std::string_view sql) {
    auto results = s->Execute(sql);
    if (results.empty() || results.back().ok()) {
      ADD_FAILURE() << sql << " succeeded";
      return Status::OK();
    }
    return results.back().status();
  }

  // The rows of a query as text, "a|b" per row.
  std::vector<std::string> Query(exec::Session* s, std::string_view sql) {
    exec::StatementResult r = Run(s, sql);
    std::vector<std::string> out;
    for (const auto& row : r.rows) {
      std::string line;
      for (size_t i = 0; i < row.size(); ++i) {
        if (i) line += "|";
        line += row[i].is_null() ? "NULL" : row[i].ToText();
      }
      out.push_back(std::move(line));
    }
    return out;
  }

  exec::Session* SessionOn(int node) {
    sessions_.push_back(std::make_unique<exec::Session>(nodes_[node]->engine.get(), 100 + sessions_.size()));
    return sessions_.back().get();
  }

  // Creates d.t (or d.`table`) on node 1, then places every slice of every representation
  // on two of the three nodes (rotating; the first ranks) and installs the
  // same definition in every node's catalog, each node holding storage
  // slices only for the replicas placed on it.
  void CreatePlacedTable(const std::string& ddl, size_t copies = 2, const std::string& table = "t") {
    exec::Session* s = SessionOn(0);
    Run(s, "CREATE DATABASE IF NOT EXISTS d");
    Run(s, ddl);
    auto current = nodes_[0]->engine->catalog()->GetTable("d", table);
    ASSERT_TRUE(current.ok());
    catalog::TableDef def = **current;
    size_t i = 0;
    auto place = [&](catalog::RepresentationDef* rep) {
      for (auto& sd : rep->slices) {
        sd.replicas.clear();
        for (size_t c = 0; c < copies; ++c) sd.replicas.push_back(nodes_[(i + c) % 3]->name);
        ++i;
      }
    };
    place(&def.primary);
    for (auto& index : def.indexes) place(&index);
    ASSERT_TRUE(nodes_[0]->engine->catalog()->ReplaceTable(*current, def).ok());
    for (int n = 1; n < 3; ++n) {
      bool created = false;
      ASSERT_TRUE(nodes_[n]->engine->catalog()->CreateDatabase("d", true, &created).ok());
      ASSERT_TRUE(nodes_[n]->engine->catalog()->CreateTable(def, false, &created).ok());
      // At node 1's version too (created at 1, replaced once), as a
      // catalog replicated through the log would be: pushed fragments
      // name the table at its version.
      auto fresh = nodes_[n]->engine->catalog()->GetTable("d", table);
      ASSERT_TRUE(fresh.ok());
      ASSERT_TRUE(nodes_[n]->engine->catalog()->ReplaceTable(*fresh, def).ok());
      ASSERT_EQ((*nodes_[n]->engine->catalog()->GetTable("d", table))->version,
                (*nodes_[0]->engine->catalog()->GetTable("d", table))->version);
    }
    for (auto& n : nodes_) {
      auto each = [&](const catalog::RepresentationDef& rep) {
        for (const auto& sd : rep.slices) {
          const bool here = std::find(sd.replicas.begin(), sd.replicas.end(), n->name) != sd.replicas.end();
          const bool stored = n->engine->slices()->GetSlice(sd.id).ok();
          if (here && !stored) {
            ASSERT_TRUE(n->engine->slices()->CreateSlice(sd.id).ok());
          }
          if (!here && stored) {
            ASSERT_TRUE(n->engine->slices()->DropSlice(sd.id).ok());
          }
        }
      };
      each(def.primary);
      for (const auto& index : def.indexes) each(index);
    }
    if (table == "t") def_ = def;
  }

  // Every stored entry (versioned keys and values) of slice `id` on `node`.
  std::vector<std::pair<std::string, std::string>> RawSlice(int node, storage::SliceId id) {
    std::vector<std::pair<std::string, std::string>> out;
    auto slice = nodes_[node]->engine->slices()->GetSlice(id);
    EXPECT_TRUE(slice.ok());
    if (!slice.ok()) return out;
    auto it = (*slice)->NewIterator(storage::KeyRange::All());
    for (; it->Valid(); it->Next()) out.emplace_back(std::string(it->key()), std::string(it->value()));
    return out;
  }

  // The index of the node whose ranking replica holds row `id` of d.t (where
  // a locking read of it takes its lock), found by taking that lock.
  int RankingNode(exec::Session* s, int id) {
    Run(s, "BEGIN");
    Run(s, fmt::format("SELECT n FROM d.t WHERE id = {} FOR UPDATE", id));
    int found = -1;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (nodes_[i]->engine->txn()->locks()->locks_held() > 0) found = static_cast<int>(i);
    }
    Run(s, "ROLLBACK");
    return found;
  }

  int NodeIndex(const std::string& name) { return in_process::IndexOf(nodes_, name); }

  // d.t (id INT PRIMARY KEY, n INT) with rows 1..30 (n = id): row x = 1
  // ranks at node r, its other replica is node n (the next one), c is the
  // third node (r = -1: not found).
  struct RowOnTwoNodes {
    int x, r, n, c;
  };
  RowOnTwoNodes PlaceRowOne() {
    CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
    Run(SessionOn(0), InsertRows(1, 30));
    const int r = RankingNode(SessionOn(0), 1);
    return RowOnTwoNodes{1, r, (r + 1) % 3, (r + 2) % 3};
  }

  // LockingReadAtANewRankingReplicaWaitsForItsPreparedWriters: the writer
  // runs through node `via`.
  void ReadAroundPreparedAtNewRankingReplica(int via);

  // Both replicas of every slice hold the same bytes (after each node's
  // garbage collector has run at the same horizon: they share one oracle
  // and hold no snapshot).
  void ExpectReplicasIdentical() {
    SyncFinishedEverywhere();  // their collection pins go
    for (auto& n : nodes_) n->engine->txn()->TEST_CollectGarbage();
    auto check = [&](const catalog::RepresentationDef& rep) {
      for (const auto& sd : rep.slices) {
        auto first = RawSlice(NodeIndex(sd.replicas[0]), sd.id);
        for (size_t r = 1; r < sd.replicas.size(); ++r) {
          EXPECT_EQ(first, RawSlice(NodeIndex(sd.replicas[r]), sd.id))
              << "slice " << sd.id << " differs between " << sd.replicas[0] << " and " << sd.replicas[r];
        }
      }
    };
    check(def_.primary);
    for (const auto& index : def_.indexes) check(index);
  }

  shale::testing::TempDir dir_;
  std::vector<std::unique_ptr<TestNode>> nodes_;
  // Decision records (txn/decision/...) in node n's MetaStore.
  size_t DecisionRecords(int n) {
    size_t records = 0;
    EXPECT_TRUE(nodes_[n]
                    ->engine->meta()
                    ->Scan("txn/decision/", [&](std::string_view, std::string_view) {
                      ++records;
                      return true;
                    })
                    .ok());
    return records;
  }

  // Every node makes the commits it applied without their WAL sync durable
  // and drops their prepared records (its sync thread does so within
  // kFinishSyncDelay; a check of the records, pins or versions right after
  // a commit does it first).
  void SyncFinishedEverywhere() {
    for (auto& n : nodes_) EXPECT_TRUE(n->data->TEST_SyncFinished().ok()) << n->name;
  }
  // The prepared records (txn/prepared/..., key and value) in node n's
  // MetaStore, once the finished ones were dropped.
  std::vector<std::pair<std::string, std::string>> PreparedRecords(TestNode* n) {
    EXPECT_TRUE(n->data->TEST_SyncFinished().ok());
    std::vector<std::pair<std::string, std::string>> records;
    EXPECT_TRUE(n->engine->meta()
                    ->Scan("txn/prepared/",
                           [&](std::string_view k, std::string_view v) {
                             records.emplace_back(k, v);
                             return true;
                           })
                    .ok());
    return records;
  }
  // Decision records in every node's MetaStore, and as the nodes count
  // them (SHOW STATUS Shale_decision_records).
  size_t TotalDecisionRecords() {
    size_t records = 0;
    for (size_t n = 0; n < nodes_.size(); ++n) records += DecisionRecords(static_cast<int>(n));
    return records;
  }
  uint64_t CountedDecisionRecords() {
    uint64_t records = 0;
    for (auto& n : nodes_) records += n->data->decision_records();
    return records;
  }
  // A commit is over everywhere: nothing prepared, every node answers
  // `count_sum` ("COUNT|SUM(n)" of d.t), replicas identical, no locks held.
  void ExpectSettled(const std::string& count_sum) {
    for (auto& n : nodes_) EXPECT_EQ(n->data->prepared_count(), 0u) << n->name;
    for (int n = 0; n < 3; ++n) {
      EXPECT_EQ(Query(SessionOn(n), "SELECT COUNT(*), SUM(n) FROM d.t"), std::vector<std::string>{count_sum})
          << nodes_[n]->name;
    }
    ExpectReplicasIdentical();
    for (auto& n : nodes_) EXPECT_EQ(n->engine->txn()->locks()->locks_held(), 0u) << n->name;
  }
  // The decision records of every node once no Paxos message is on its
  // way: an outcome is chosen once a majority of its acceptors answered,
  // and the last acceptor's record may be written a moment after.
  size_t AwaitDecisionRecords() {
    for (auto& n : nodes_) n->data->TEST_DrainPaxosCalls();
    SyncFinishedEverywhere();
    return TotalDecisionRecords();
  }
  // The values the acceptors of the one transaction with decision records
  // accepted ("commit at T" or "abort"), over every node; the transaction.
  std::set<std::string> AcceptedValues(txn::TxnKey* txn = nullptr) {
    std::set<std::string> values;
    for (auto& n : nodes_) {
      EXPECT_TRUE(n->engine->meta()
                      ->Scan("txn/decision/",
                             [&](std::string_view k, std::string_view v) {
                               txn::commit::AcceptorState state;
                               EXPECT_TRUE(txn::commit::DecodeAcceptorState(v, &state)) << k;
                               if (state.accepted) values.insert(state.value.ToString());
                               if (txn != nullptr) {
                                 const std::string key(k.substr(std::string_view("txn/decision/").size()));
                                 txn->coordinator = key.substr(0, key.rfind('/'));
                                 txn->id = std::stoull(key.substr(key.rfind('/') + 1));
                               }
                               return true;
                             })
                      .ok());
    }
    return values;
  }
  // One sweep of the decision records at every node; the records dropped.
  size_t SweepEveryNode() {
    SyncFinishedEverywhere();
    size_t dropped = 0;
    for (auto& n : nodes_) dropped += n->data->TEST_SweepDecisions();
    return dropped;
  }

  Result<std::string> AddressOf(const std::string& name) { return addresses_.AddressOf(name); }
  void SetAddress(const std::string& name, const std::string& address) { addresses_.Set(name, address); }
  void EraseAddress(const std::string& name) { addresses_.Erase(name); }
  // Node name -> address: the membership as the nodes see it (the
  // SliceServices' background threads read it while a test changes it).
  in_process::AddressBook addresses_;
  std::vector<std::unique_ptr<exec::Session>> sessions_;
  catalog::TableDef def_;
  std::unique_ptr<txn::DeadlockDetector> detector_;  // runs on node 1
};

TEST_F(DataPathTest, WritesThroughOneNodeReadIdenticallyOnEvery) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, v VARCHAR(20), n INT, KEY kv (v)) SLICES=6");
  exec::Session* s1 = SessionOn(0);
  std::string insert = "INSERT INTO d.t VALUES ";
  for (int i = 1; i <= 40; ++i) {
    insert += (i > 1 ? "," : "") + fmt::format("({}, 'v{}', {})", i, i % 7, i * 10);
  }
  EXPECT_EQ(Run(s1, insert).affected_rows, 40u);
  EXPECT_EQ(Run(s1, "UPDATE d.t SET n = n + 1 WHERE id <= 10").affected_rows, 10u);
  EXPECT_EQ(Run(s1, "DELETE FROM d.t WHERE id > 35").affected_rows, 5u);

  const auto expected = Query(s1, "SELECT id, v, n FROM d.t ORDER BY id");
  ASSERT_EQ(expected.size(), 35u);
  EXPECT_EQ(expected[0], "1|v1|11");
  EXPECT_EQ(expected[34], "35|v0|350");
  for (int n = 1; n < 3; ++n) {
    exec::Session* s = SessionOn(n);
    EXPECT_EQ(Query(s, "SELECT id, v, n FROM d.t ORDER BY id"), expected) << nodes_[n]->name;
    EXPECT_EQ(Query(s, "SELECT n FROM d.t WHERE id = 7"), std::vector<std::string>{"71"});
    EXPECT_EQ(Query(s, "SELECT COUNT(*) FROM d.t WHERE v = 'v3'"), std::vector<std::string>{"5"});
    EXPECT_EQ(Query(s, "SELECT id FROM d.t ORDER BY id DESC LIMIT 2"), (std::vector<std::string>{"35", "34"}));
  }
  // Writes through another node land on the same replicas.
  exec::Session* s3 = SessionOn(2);
  Run(s3, "UPDATE d.t SET v = 'x' WHERE id = 20");
  EXPECT_EQ(Query(s1, "SELECT id FROM d.t WHERE v = 'x'"), std::vector<std::string>{"20"});
  ExpectReplicasIdentical();
  // Some of those rows came from or went to other nodes.
  EXPECT_GT(nodes_[0]->data->rows_moved(), 0u);
  EXPECT_GT(nodes_[1]->data->rows_moved(), 0u);
  // Over the nodes' links (node_link.h), not gRPC.
  for (const auto& n : nodes_) EXPECT_GT(n->rpc->link()->calls_served(), 0u) << n->name;
}

// The key checks of INSERT and the row reads of UPDATE/DELETE by primary
// key read the row's newest version right after locking it at its ranking
// replica: when that is another node, the read comes back with the lock
// (one round trip, DataRouter::LatestRead), and answers as the separate
// read did: duplicates are found, updates see the current value, a row
// written earlier in the transaction is read from its write set.
TEST_F(DataPathTest, ARowReadUnderARemoteLockComesBackWithTheLock) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  exec::Session* s1 = SessionOn(0);
  std::string insert = "INSERT INTO d.t VALUES ";
  for (int i = 1; i <= 30; ++i) insert += fmt::format("{}({}, {})", i > 1 ? "," : "", i, i);
  Run(s1, insert);
  auto count = [](std::string_view method) {
    for (const cluster::RpcMethodCounts& m : cluster::GetRpcCounts().methods) {
      if (m.method == method) return m.sent;
    }
    return uint64_t{0};
  };
  const uint64_t gets = count("Get");
  const uint64_t locks = count("Lock");
  for (int i = 1; i <= 30; ++i) {
    EXPECT_EQ(Fail(s1, fmt::format("INSERT INTO d.t VALUES ({}, 0)", i)).mysql_code(), 1062) << i;
    EXPECT_EQ(Run(s1, fmt::format("UPDATE d.t SET n = n + 100 WHERE id = {}", i)).affected_rows, 1u) << i;
  }
  Run(s1, "BEGIN");
  Run(s1, "INSERT INTO d.t VALUES (31, 31)");
  EXPECT_EQ(Fail(s1, "INSERT INTO d.t VALUES (31, 0)").mysql_code(), 1062);
  Run(s1, "UPDATE d.t SET n = n + 100 WHERE id = 31");
  Run(s1, "DELETE FROM d.t WHERE id = 1");
  Run(s1, "INSERT INTO d.t VALUES (1, 7)");
  Run(s1, "COMMIT");
  // Rows ranked at the two other nodes were locked there, and no row was
  // read by a Get of its own.
  EXPECT_GT(count("Lock"), locks + 20);
  EXPECT_EQ(count("Get"), gets);
  const auto rows = Query(SessionOn(2), "SELECT id, n FROM d.t WHERE id IN (1, 2, 30, 31) ORDER BY id");
  EXPECT_EQ(rows, (std::vector<std::string>{"1|7", "2|102", "30|130", "31|131"}));
  EXPECT_EQ(Query(SessionOn(1), "SELECT SUM(n) FROM d.t"), std::vector<std::string>{std::to_string(465 + 3000 - 101 + 7 + 131)});
  ExpectReplicasIdentical();
}

// A plain read through a secondary index fetches its rows a batch at a
// time: the rows of each remote slice in one batched lookup, not a Get per
// row; with the same answers as row by row, through every node, inside a
// transaction that wrote some of them (read through its own writes), and
// past rows deleted since the index was read.
TEST_F(DataPathTest, RowsBehindAnIndexAreFetchedInBatches) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, v VARCHAR(20), n INT, KEY kv (v)) SLICES=6");
  exec::Session* s1 = SessionOn(0);
  std::string insert = "INSERT INTO d.t VALUES ";
  for (int i = 1; i <= 300; ++i) insert += fmt::format("{}({}, 'u{}', {})", i > 1 ? "," : "", i, i % 3, i);
  Run(s1, insert);
  auto count = [](std::string_view method) {
    for (const cluster::RpcMethodCounts& m : cluster::GetRpcCounts().methods) {
      if (m.method == method) return m.sent;
    }
    return uint64_t{0};
  };
  // 100 rows under v = 'u1': ids 1, 4, ..., 298; their n sum to 14,950.
  for (int n = 0; n < 3; ++n) {
    exec::Session* s = SessionOn(n);
    const uint64_t gets = count("Get");
    EXPECT_EQ(Query(s, "SELECT COUNT(*), SUM(n) FROM d.t WHERE v = 'u1'"),
              std::vector<std::string>{"100|14950"})
        << nodes_[n]->name;
    EXPECT_EQ(Query(s, "SELECT id FROM d.t WHERE v = 'u1' ORDER BY v LIMIT 3"),
              (std::vector<std::string>{"1", "4", "7"}))
        << nodes_[n]->name;
    EXPECT_LT(count("Get") - gets, 10u) << nodes_[n]->name << ": rows fetched one by one";
  }
  // Through a transaction's own writes, and past deleted rows.
  exec::Session* s2 = SessionOn(1);
  Run(s2, "BEGIN");
  Run(s2, "UPDATE d.t SET n = 0 WHERE id IN (1, 4, 7, 10)");
  Run(s2, "DELETE FROM d.t WHERE id IN (13, 16)");
  Run(s2, "INSERT INTO d.t VALUES (301, 'u1', 1000)");
  EXPECT_EQ(Query(s2, "SELECT COUNT(*), SUM(n) FROM d.t WHERE v = 'u1'"),
            std::vector<std::string>{"99|" + std::to_string(14950 - 1 - 4 - 7 - 10 - 13 - 16 + 1000)});
  EXPECT_EQ(Query(s1, "SELECT COUNT(*), SUM(n) FROM d.t WHERE v = 'u1'"),
            std::vector<std::string>{"100|14950"})
      << "not committed yet";
  Run(s2, "COMMIT");
  Run(s1, "DELETE FROM d.t WHERE id = 298");
  for (int n = 0; n < 3; ++n) {
    EXPECT_EQ(Query(SessionOn(n), "SELECT COUNT(*), SUM(n) FROM d.t WHERE v = 'u1'"),
              std::vector<std::string>{"98|" + std::to_string(14950 - 1 - 4 - 7 - 10 - 13 - 16 + 1000 - 298)})
        << nodes_[n]->name;
  }
}

TEST_F(DataPathTest, TransactionSeesOwnWritesAndCommitsAtomically) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  exec::Session* s1 = SessionOn(0);
  exec::Session* s2 = SessionOn(1);
  Run(s1, "INSERT INTO d.t VALUES (1, 1), (2, 2), (3, 3)");
  Run(s1, "BEGIN");
  Run(s1, "INSERT INTO d.t VALUES (4, 4), (5, 5), (6, 6), (7, 7)");
  Run(s1, "UPDATE d.t SET n = 10 WHERE id = 1");
  EXPECT_EQ(Query(s1, "SELECT SUM(n) FROM d.t"), std::vector<std::string>{"37"});
  EXPECT_EQ(Query(s2, "SELECT SUM(n) FROM d.t"), std::vector<std::string>{"6"});
  Run(s1, "COMMIT");
  EXPECT_EQ(Query(s2, "SELECT SUM(n) FROM d.t"), std::vector<std::string>{"37"});
  // A rolled-back transaction leaves nothing anywhere.
  Run(s2, "BEGIN");
  Run(s2, "DELETE FROM d.t WHERE id > 2");
  Run(s2, "ROLLBACK");
  EXPECT_EQ(Query(s1, "SELECT COUNT(*) FROM d.t"), std::vector<std::string>{"7"});
  ExpectReplicasIdentical();
}

TEST_F(DataPathTest, RowLocksAtTheRankingReplicaBlockOtherNodes) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  exec::Session* s2 = SessionOn(1);
  exec::Session* s3 = SessionOn(2);
  Run(s2, "INSERT INTO d.t VALUES (1, 1), (2, 2)");
  Run(s2, "BEGIN");
  Run(s2, "UPDATE d.t SET n = 100 WHERE id = 1");
  Run(s3, "SET innodb_lock_wait_timeout = 1");
  Run(s3, "BEGIN");
  Status st = Fail(s3, "UPDATE d.t SET n = 200 WHERE id = 1");
  EXPECT_EQ(st.mysql_code(), 1205) << st.ToString();
  EXPECT_EQ(Fail(s3, "SELECT n FROM d.t WHERE id = 1 FOR UPDATE").mysql_code(), 1205);
  // Another row is free.
  Run(s3, "UPDATE d.t SET n = 20 WHERE id = 2");
  Run(s3, "COMMIT");
  Run(s2, "COMMIT");
  Run(s3, "UPDATE d.t SET n = n + 1 WHERE id = 1");
  EXPECT_EQ(Query(s3, "SELECT id, n FROM d.t ORDER BY id"), (std::vector<std::string>{"1|101", "2|20"}));
  ExpectReplicasIdentical();
  for (auto& n : nodes_) EXPECT_EQ(n->engine->txn()->locks()->locks_held(), 0u) << n->name;
}

// A cycle through two nodes' locks: A holds row X at node 2 and waits for
// row Y at node 3, which B holds while it waits for X at node 2. Neither
// node sees the cycle; the cluster's detector ends B's wait (B is the
// younger) with 1213 within a second or two, far below the 30 s lock wait
// timeout, and A commits. Run twice: A coordinated by node 1 and B by node
// 2 (the victim waits in its own node's lock manager, for a remote
// transaction's lock), then A by node 2 and B by node 1 (the victim waits
// at another node, between 250 ms lock requests).
TEST_F(DataPathTest, DeadlockAcrossNodesEndsTheYoungestWith1213) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  exec::Session* s1 = SessionOn(0);
  Run(s1, "INSERT INTO d.t VALUES (1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6), (7, 7), (8, 8), (9, 9), (10, 10), "
          "(11, 11), (12, 12)");
  int x = 0, y = 0;  // ranked at node 2 and node 3
  for (int id = 1; id <= 12; ++id) {
    const int node = RankingNode(s1, id);
    if (node == 1 && x == 0) x = id;
    if (node == 2 && y == 0) y = id;
  }
  ASSERT_NE(x, 0);
  ASSERT_NE(y, 0);
  uint64_t victims = 0;
  for (auto [a_node, b_node, a_value, b_value] : {std::tuple{0, 1, 100, 200}, std::tuple{1, 0, 300, 400}}) {
    SCOPED_TRACE(fmt::format("A through {}, B through {}", nodes_[a_node]->name, nodes_[b_node]->name));
    exec::Session* sa = SessionOn(a_node);
    exec::Session* sb = SessionOn(b_node);
    Run(sa, "SET innodb_lock_wait_timeout = 30");
    Run(sb, "SET innodb_lock_wait_timeout = 30");
    Run(sa, "BEGIN");
    Run(sa, fmt::format("UPDATE d.t SET n = {} WHERE id = {}", a_value, x));  // A holds X at node 2
    Run(sb, "BEGIN");
    Run(sb, fmt::format("UPDATE d.t SET n = {} WHERE id = {}", b_value, y));  // B holds Y at node 3
    Status a_status;
    std::thread a([&, a_value = a_value] {
      auto r = Exec(sa, fmt::format("UPDATE d.t SET n = {} WHERE id = {}", a_value, y));  // A waits at node 3
      a_status = r.back().status();
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const auto start = std::chrono::steady_clock::now();
    auto r = Exec(sb, fmt::format("UPDATE d.t SET n = {} WHERE id = {}", b_value, x));  // B waits at node 2: the cycle
    const auto took = std::chrono::steady_clock::now() - start;
    a.join();
    ASSERT_FALSE(r.back().ok());
    EXPECT_EQ(r.back().status().mysql_code(), 1213) << r.back().status().ToString();
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(took).count();
    std::printf("A through %s, B through %s: the victim's statement ended after %lld ms: %s\n",
                nodes_[a_node]->name.c_str(), nodes_[b_node]->name.c_str(), static_cast<long long>(ms),
                r.back().status().ToString().c_str());
    EXPECT_LT(ms, 5000);
    EXPECT_TRUE(a_status.ok()) << a_status.ToString();
    // The detector counts the victim once AbortLockWait has returned to it,
    // which may be just after the victim's statement saw its 1213.
    ++victims;
    shale::testing::WaitFor([&] { return detector_->victims() >= victims; }, std::chrono::seconds(5));
    EXPECT_EQ(detector_->victims(), victims);
    // B's whole transaction was rolled back (its write of Y is gone, its
    // locks released); A commits both rows.
    EXPECT_FALSE(sb->in_transaction());
    Run(sa, "COMMIT");
    EXPECT_EQ(Query(SessionOn(2), fmt::format("SELECT id, n FROM d.t WHERE id IN ({}, {}) ORDER BY id", x, y)),
              (std::vector<std::string>{fmt::format("{}|{}", std::min(x, y), a_value),
                                        fmt::format("{}|{}", std::max(x, y), a_value)}));
    EXPECT_EQ(Query(sb, "SELECT SUM(n) FROM d.t"), std::vector<std::string>{std::to_string(78 - x - y + 2 * a_value)});
    ExpectReplicasIdentical();
    for (auto& n : nodes_) EXPECT_EQ(n->engine->txn()->locks()->locks_held(), 0u) << n->name;
  }
}

// Three transactions through three nodes, each holding a row ranked at
// one node and waiting for the next one's: one cycle through every node.
// Exactly one of them (the youngest, C) gets 1213; the other two commit.
TEST_F(DataPathTest, DeadlockThroughThreeNodesHasOneVictim) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  exec::Session* s1 = SessionOn(0);
  Run(s1, "INSERT INTO d.t VALUES (1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6), (7, 7), (8, 8), (9, 9), (10, 10), "
          "(11, 11), (12, 12)");
  int row[3] = {0, 0, 0};  // row[i] ranked at node i
  for (int id = 1; id <= 12; ++id) {
    const int node = RankingNode(s1, id);
    if (node >= 0 && row[node] == 0) row[node] = id;
  }
  for (int i = 0; i < 3; ++i) ASSERT_NE(row[i], 0) << "no row ranked at " << nodes_[i]->name;
  // Transaction i runs through node i, holds row[i] and then waits for
  // row[(i + 1) % 3]; the last one to wait closes the cycle.
  exec::Session* s[3];
  for (int i = 0; i < 3; ++i) {
    s[i] = SessionOn(i);
    Run(s[i], "SET innodb_lock_wait_timeout = 30");
    Run(s[i], "BEGIN");
    Run(s[i], fmt::format("UPDATE d.t SET n = {} WHERE id = {}", 100 * (i + 1), row[i]));
  }
  Status status[3];
  std::chrono::steady_clock::time_point ended[3];
  std::vector<std::thread> waiters;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 3; ++i) {
    waiters.emplace_back([&, i] {
      auto r = Exec(s[i], fmt::format("UPDATE d.t SET n = {} WHERE id = {}", 100 * (i + 1), row[(i + 1) % 3]));
      status[i] = r.back().status();
      ended[i] = std::chrono::steady_clock::now();
      if (status[i].ok()) Run(s[i], "COMMIT");
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  for (auto& t : waiters) t.join();
  const auto formed = start + std::chrono::milliseconds(400);
  int victims = 0;
  for (int i = 0; i < 3; ++i) {
    if (status[i].ok()) continue;
    ++victims;
    EXPECT_EQ(i, 2) << "the youngest is the victim";
    EXPECT_EQ(status[i].mysql_code(), 1213) << status[i].ToString();
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(ended[i] - formed).count();
    std::printf("three-node cycle: the victim's statement ended %lld ms after the cycle formed\n",
                static_cast<long long>(ms));
    EXPECT_LT(ms, 5000);
  }
  EXPECT_EQ(victims, 1);
  // C rolled back (row[2] released, its write gone); B then wrote row[2]
  // and committed, releasing row[1]; A wrote row[1] after that.
  auto rows = Query(SessionOn(1), fmt::format("SELECT id, n FROM d.t WHERE id IN ({}, {}, {}) ORDER BY id", row[0],
                                              row[1], row[2]));
  std::map<int, int> want = {{row[0], 100}, {row[1], 100}, {row[2], 200}};
  std::vector<std::string> expected;
  for (const auto& [id, n] : want) expected.push_back(fmt::format("{}|{}", id, n));
  EXPECT_EQ(rows, expected);
  ExpectReplicasIdentical();
  for (auto& n : nodes_) EXPECT_EQ(n->engine->txn()->locks()->locks_held(), 0u) << n->name;
}

// A plain wait for another node's lock, no cycle: the detector leaves it
// alone; it waits until the holder commits, then goes through.
TEST_F(DataPathTest, LockWaitAcrossNodesWithoutACycleIsNotADeadlock) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  exec::Session* s1 = SessionOn(0);
  exec::Session* s2 = SessionOn(1);
  Run(s1, "INSERT INTO d.t VALUES (1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6)");
  int x = 0;  // a row ranked at node 3: both wait there
  for (int id = 1; id <= 6 && x == 0; ++id) {
    if (RankingNode(s1, id) == 2) x = id;
  }
  ASSERT_NE(x, 0);
  Run(s2, "SET innodb_lock_wait_timeout = 30");
  Run(s1, "BEGIN");
  Run(s1, fmt::format("UPDATE d.t SET n = n + 1 WHERE id = {}", x));
  Status b_status;
  std::chrono::steady_clock::duration waited{};
  std::thread b([&] {
    const auto start = std::chrono::steady_clock::now();
    auto r = Exec(s2, fmt::format("UPDATE d.t SET n = n + 10 WHERE id = {}", x));
    waited = std::chrono::steady_clock::now() - start;
    b_status = r.back().status();
  });
  // Many detector rounds while B waits.
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  Run(s1, "COMMIT");
  b.join();
  EXPECT_TRUE(b_status.ok()) << b_status.ToString();
  EXPECT_GE(waited, std::chrono::milliseconds(2000));
  EXPECT_EQ(detector_->victims(), 0u);
  EXPECT_EQ(Query(s1, fmt::format("SELECT n FROM d.t WHERE id = {}", x)),
            std::vector<std::string>{std::to_string(x + 11)});
  for (auto& n : nodes_) EXPECT_EQ(n->engine->txn()->locks()->locks_held(), 0u) << n->name;
}

TEST_F(DataPathTest, StaleEpochIsRefusedWithARetryableError) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  exec::Session* s1 = SessionOn(0);
  Run(s1, "INSERT INTO d.t VALUES (1, 1), (2, 2), (3, 3), (4, 4)");
  nodes_[1]->epoch = 5;  // node 2 has seen a newer cluster metadata epoch
  Status st = Fail(s1, "SELECT COUNT(*) FROM d.t");
  EXPECT_EQ(st.mysql_code(), 1047) << st.ToString();
  EXPECT_STREQ(st.sqlstate(), "08S01");
  nodes_[0]->epoch = 5;
  nodes_[2]->epoch = 5;
  EXPECT_EQ(Query(s1, "SELECT COUNT(*) FROM d.t"), std::vector<std::string>{"4"});
}

// Push-down (src/exec/pushdown.h, docs/cluster.md "Query path"): each
// statement answers the same with shale_pushdown on and off, through every
// node, inside and outside a transaction with its own writes; aggregates
// then move at most one partial row per group and remote slice.
class PushdownTest : public DataPathTest {
 protected:
  static constexpr const char* kTable =
      "CREATE TABLE d.t (id INT PRIMARY KEY, g INT, v INT, d DECIMAL(12,3), s VARCHAR(10)) SLICES=6";

  // The rows of `sql` through `on` (pushdown on) and `off` (off) are equal;
  // returns them. *moved_on / *moved_off: rows node `node` received.
  std::vector<std::string> Same(int node, exec::Session* on, exec::Session* off, const std::string& sql,
                                uint64_t* moved_on = nullptr, uint64_t* moved_off = nullptr) {
    SliceService* data = nodes_[node]->data.get();
    uint64_t before = data->rows_received();
    auto with = Query(on, sql);
    if (moved_on) *moved_on = data->rows_received() - before;
    before = data->rows_received();
    auto without = Query(off, sql);
    if (moved_off) *moved_off = data->rows_received() - before;
    EXPECT_EQ(with, without) << sql << " through " << nodes_[node]->name;
    return with;
  }

  std::string Plan(exec::Session* s, const std::string& sql) {
    std::string text;
    for (const std::string& line : Query(s, "EXPLAIN " + sql)) text += line + "\n";
    return text;
  }

  // 300 rows: NULLs in every column but the key, negative DECIMALs, and
  // strings equal under utf8mb4_general_ci ('b1', 'B1') in different slices.
  void Fill(exec::Session* s) {
    std::string insert = "INSERT INTO d.t VALUES ";
    for (int i = 1; i <= 300; ++i) {
      const std::string g = i % 11 == 0 ? "NULL" : std::to_string(i % 5);
      const std::string v = i % 7 == 0 ? "NULL" : std::to_string((i * 37) % 200 - 50);
      const std::string d = i % 13 == 0 ? "NULL" : fmt::format("{}{}.{:03d}", i % 3 == 0 ? "-" : "", i % 17, (i * 7) % 1000);
      const std::string str = i % 9 == 0 ? "NULL" : fmt::format("'{}{}'", i % 2 ? 'b' : 'B', i % 3);
      insert += fmt::format("{}({}, {}, {}, {}, {})", i > 1 ? "," : "", i, g, v, d, str);
    }
    Run(s, insert);
  }

  // SUM(d) of Fill's rows, exactly, from the same numbers.
  static std::string ExpectedSumD() {
    int64_t milli = 0;
    for (int i = 1; i <= 300; ++i) {
      if (i % 13 == 0) continue;
      const int64_t m = (i % 17) * 1000 + (i * 7) % 1000;
      milli += i % 3 == 0 ? -m : m;
    }
    const int64_t a = milli < 0 ? -milli : milli;
    return fmt::format("{}{}.{:03d}", milli < 0 ? "-" : "", a / 1000, a % 1000);
  }

  // Every query of queries_ answers the same with pushdown on and off,
  // and the same through every node.
  void ExpectEveryQuerySame(const std::vector<exec::Session*>& on, const std::vector<exec::Session*>& off) {
    std::vector<std::vector<std::string>> first;  // through node 1
    for (int n = 0; n < 3; ++n) {
      std::vector<std::vector<std::string>> answers;
      for (const std::string& q : queries_) answers.push_back(Same(n, on[n], off[n], q));
      if (n == 0) first = answers;
      EXPECT_EQ(answers, first) << "through " << nodes_[n]->name;
    }
  }

  const std::vector<std::string> queries_ = {
      "SELECT COUNT(*) FROM d.t WHERE v < 100",
      "SELECT g, COUNT(*), COUNT(v), SUM(v), MIN(v), MAX(v), AVG(v), SUM(d), AVG(d), MIN(s), MAX(s) FROM d.t "
      "WHERE v < 120 OR v IS NULL GROUP BY g",
      "SELECT SUM(d), AVG(d), MIN(d), MAX(d), COUNT(d), COUNT(*) FROM d.t",
      "SELECT COUNT(*), COUNT(v), SUM(v), MIN(s), AVG(d) FROM d.t WHERE v > 100000",
      "SELECT g, COUNT(*) FROM d.t WHERE v > 100000 GROUP BY g",
      "SELECT s, SUM(d), MIN(id) FROM d.t WHERE id BETWEEN 20 AND 200 GROUP BY s",
      "SELECT g + 1, MAX(s) FROM d.t WHERE s LIKE 'b%' AND d IS NOT NULL GROUP BY g + 1",
      "SELECT id, v, s FROM d.t WHERE v BETWEEN 10 AND 20 OR s = 'B2'",
      "SELECT COUNT(DISTINCT g), SUM(v) FROM d.t WHERE v < 50",  // DISTINCT: not pushed
  };
};

TEST_F(PushdownTest, AnswersEqualTheUnpushedPathThroughEveryNode) {
  CreatePlacedTable(kTable);
  std::vector<exec::Session*> on, off;
  for (int n = 0; n < 3; ++n) {
    on.push_back(SessionOn(n));
    off.push_back(SessionOn(n));
    Run(off.back(), "SET shale_pushdown = 0");
  }
  // Every slice empty: COUNT 0, the others NULL, no group.
  for (int n = 0; n < 3; ++n) {
    EXPECT_EQ(Same(n, on[n], off[n], "SELECT COUNT(*), SUM(d), MIN(s), AVG(v) FROM d.t WHERE v < 10"),
              std::vector<std::string>{"0|NULL|NULL|NULL"});
    EXPECT_TRUE(Same(n, on[n], off[n], "SELECT g, SUM(d) FROM d.t GROUP BY g").empty());
  }
  // Two rows: most slices are empty.
  Run(on[0], "INSERT INTO d.t VALUES (1, 1, NULL, 0.001, 'x'), (2, 1, 5, NULL, NULL)");
  for (int n = 0; n < 3; ++n) {
    EXPECT_EQ(Same(n, on[n], off[n], "SELECT g, COUNT(*), COUNT(v), SUM(d), MIN(s), AVG(v) FROM d.t GROUP BY g"),
              std::vector<std::string>{"1|2|1|0.001|x|5.0000"});
  }
  Run(on[0], "DELETE FROM d.t");
  Fill(on[0]);
  ExpectEveryQuerySame(on, off);
  // DECIMAL sums are exact.
  EXPECT_EQ(Query(on[1], "SELECT SUM(d) FROM d.t"), std::vector<std::string>{ExpectedSumD()});
  EXPECT_EQ(Query(on[2], "SELECT COUNT(*) FROM d.t WHERE v < 100"), Query(off[0], "SELECT COUNT(*) FROM d.t WHERE v < 100"));
}

TEST_F(PushdownTest, AggregatesMoveOnlyPartialRows) {
  CreatePlacedTable(kTable);
  exec::Session* loader = SessionOn(0);
  Fill(loader);
  const std::string grouped = queries_[1];
  for (int n = 0; n < 3; ++n) {
    exec::Session* on = SessionOn(n);
    exec::Session* off = SessionOn(n);
    Run(off, "SET shale_pushdown = 0");
    EXPECT_NE(Plan(on, grouped).find("[pushed: filter, partial aggregate]"), std::string::npos) << Plan(on, grouped);
    EXPECT_EQ(Plan(off, grouped).find("pushed"), std::string::npos);
    EXPECT_EQ(Plan(on, queries_.back()).find("partial aggregate"), std::string::npos);  // COUNT(DISTINCT)
    // Each node ranks 2 of the 6 slices: 4 are remote.
    uint64_t moved_on = 0, moved_off = 0;
    const size_t groups = Same(n, on, off, grouped, &moved_on, &moved_off).size();
    EXPECT_EQ(groups, 6u);  // 0..4 and NULL
    EXPECT_LE(moved_on, 4 * groups) << nodes_[n]->name;
    EXPECT_GT(moved_off, 100u) << nodes_[n]->name;
    Same(n, on, off, queries_[0], &moved_on, &moved_off);
    EXPECT_LE(moved_on, 4u) << nodes_[n]->name;  // one COUNT per remote slice
    EXPECT_GT(moved_off, 100u);
    // A pushed filter moves only the rows that pass.
    const auto rows = Same(n, on, off, "SELECT id FROM d.t WHERE v = 3", &moved_on, &moved_off);
    EXPECT_LE(moved_on, rows.size());
    EXPECT_GT(moved_off, 100u);
  }
}

TEST_F(PushdownTest, TransactionSeesItsOwnWritesThroughPushedStatements) {
  CreatePlacedTable(kTable);
  exec::Session* s = SessionOn(1);
  exec::Session* other = SessionOn(2);
  Fill(s);
  Run(s, "BEGIN");
  Run(s, "INSERT INTO d.t VALUES (1001, 2, 7, 1.5, 'zz'), (1002, NULL, -3, -0.25, 'b1')");
  Run(s, "UPDATE d.t SET v = v + 1000, d = d * 2 WHERE id <= 30");
  Run(s, "DELETE FROM d.t WHERE id BETWEEN 40 AND 60");
  for (const std::string& q : queries_) {
    Run(s, "SET shale_pushdown = 1");
    auto with = Query(s, q);
    Run(s, "SET shale_pushdown = 0");
    EXPECT_EQ(with, Query(s, q)) << q;
  }
  Run(s, "SET shale_pushdown = 1");
  // The 2 inserted rows and the 20 updated ones whose value was positive
  // (ids 1..30 with (id * 37) % 200 > 50, but 7, 14, 21, 28: NULL).
  EXPECT_EQ(Query(s, "SELECT COUNT(*), MAX(v) FROM d.t WHERE id > 1000 OR v > 1000"),
            std::vector<std::string>{"22|1149"});
  EXPECT_EQ(Query(s, "SELECT COUNT(*) FROM d.t WHERE id BETWEEN 40 AND 60"), std::vector<std::string>{"0"});
  // Another node's snapshot sees none of it.
  EXPECT_EQ(Query(other, "SELECT COUNT(*) FROM d.t WHERE id > 1000 OR v > 1000"), std::vector<std::string>{"0"});
  Run(s, "ROLLBACK");
  // A locking read keeps today's path (it locks the rows it reads here).
  Run(s, "BEGIN");
  EXPECT_EQ(Query(s, "SELECT COUNT(*) FROM d.t WHERE v < 100 FOR UPDATE"),
            Query(other, "SELECT COUNT(*) FROM d.t WHERE v < 100"));
  Run(s, "COMMIT");
}

TEST_F(PushdownTest, StaleEpochIsRefusedWithARetryableError) {
  CreatePlacedTable(kTable);
  exec::Session* s1 = SessionOn(0);
  Fill(s1);
  nodes_[1]->epoch = 5;  // node 2 has seen a newer cluster metadata epoch
  for (const char* sql : {"SELECT g, SUM(v) FROM d.t WHERE v < 100 GROUP BY g", "SELECT id FROM d.t WHERE v = 3"}) {
    Status st = Fail(s1, sql);
    EXPECT_EQ(st.mysql_code(), 1047) << sql << ": " << st.ToString();
    EXPECT_STREQ(st.sqlstate(), "08S01");
  }
  nodes_[0]->epoch = 5;
  nodes_[2]->epoch = 5;
  exec::Session* off = SessionOn(0);
  Run(off, "SET shale_pushdown = 0");
  Same(0, s1, off, "SELECT g, SUM(v) FROM d.t WHERE v < 100 GROUP BY g");
}

// Join push-down (docs/cluster.md "Query path"): a join on the inner
// table's primary key with a filtered outer side sends the outer keys in
// batches to the slices holding them (one Fragment request per slice) with
// the inner side's filter; answers equal the unpushed path through every
// node, inner and LEFT joins, with NULL keys, duplicate outer keys, string
// keys equal under the collation and a pushed inner filter.
class JoinPushdownTest : public PushdownTest {
 protected:
  static constexpr const char* kOuter =
      "CREATE TABLE d.o (id INT PRIMARY KEY, g INT, k INT, ks VARCHAR(10)) SLICES=6";
  static constexpr const char* kStrings = "CREATE TABLE d.s (name VARCHAR(10) PRIMARY KEY, n INT) SLICES=6";

  // 400 outer rows: k NULL for every 10th, else k in 1..340 (so many
  // outer rows share a key and some keys, 301..340, match no t row); ks
  // 'b0'..'B2' in both cases and 'zz' (no match).
  void FillOuter(exec::Session* s) {
    std::string insert = "INSERT INTO d.o VALUES ";
    for (int i = 1; i <= 400; ++i) {
      const std::string k = i % 10 == 0 ? "NULL" : std::to_string((i * 7) % 340 + 1);
      const std::string ks = i % 6 == 0 ? "'zz'" : i % 8 == 0 ? "NULL" : fmt::format("'{}{}'", i % 2 ? 'b' : 'B', i % 3);
      insert += fmt::format("{}({}, {}, {}, {})", i > 1 ? "," : "", i, i % 4, k, ks);
    }
    Run(s, insert);
    Run(s, "INSERT INTO d.s VALUES ('b0', 10), ('b1', 11), ('B2', 12), ('c', 13)");
  }

  const std::vector<std::string> join_queries_ = {
      "SELECT o.id, t.id, t.v FROM d.o o JOIN d.t t ON t.id = o.k WHERE o.g = 1",
      "SELECT o.id, t.id, t.s FROM d.o o LEFT JOIN d.t t ON t.id = o.k WHERE o.g = 2",
      "SELECT COUNT(*), SUM(t.v) FROM d.o o JOIN d.t t ON t.id = o.k WHERE o.g <> 3",
      "SELECT o.id, t.v FROM d.o o JOIN d.t t ON t.id = o.k WHERE o.g = 1 AND t.v > 20",
      "SELECT o.id, t.v FROM d.o o LEFT JOIN d.t t ON t.id = o.k AND t.v > 20 WHERE o.g = 1",
      "SELECT o.id, x.n FROM d.o o JOIN d.s x ON x.name = o.ks WHERE o.g >= 2",
      "SELECT o.id, x.n FROM d.o o LEFT JOIN d.s x ON x.name = o.ks WHERE o.g = 0",
  };

  void CreateJoinTables() {
    CreatePlacedTable(kTable);
    CreatePlacedTable(kOuter, 2, "o");
    CreatePlacedTable(kStrings, 2, "s");
  }
};

TEST_F(JoinPushdownTest, AnswersEqualTheUnpushedPathThroughEveryNode) {
  CreateJoinTables();
  exec::Session* loader = SessionOn(0);
  Fill(loader);
  FillOuter(loader);
  std::vector<std::vector<std::string>> first;
  for (int n = 0; n < 3; ++n) {
    exec::Session* on = SessionOn(n);
    exec::Session* off = SessionOn(n);
    Run(off, "SET shale_pushdown = 0");
    std::vector<std::vector<std::string>> answers;
    for (const std::string& q : join_queries_) {
      EXPECT_NE(Plan(on, q).find("[pushed: batched lookup"), std::string::npos) << q << "\n" << Plan(on, q);
      EXPECT_EQ(Plan(off, q).find("batched lookup"), std::string::npos) << q;
      uint64_t moved_on = 0, moved_off = 0;
      answers.push_back(Same(n, on, off, q, &moved_on, &moved_off));
      // Each node ranks 2 of the 6 slices of t: a hash join reads the 4
      // remote ones whole (about 200 rows); the batched lookup receives at
      // most one row per distinct key.
      EXPECT_GT(moved_off, 100u) << q;
      EXPECT_LT(moved_on, moved_off) << q;
    }
    EXPECT_NE(Plan(on, join_queries_[3]).find("[pushed: batched lookup, filter]"), std::string::npos);
    if (n == 0) first = answers;
    EXPECT_EQ(answers, first) << "through " << nodes_[n]->name;
  }
  // Against numbers computed here: o.g = 1 rows with k not NULL and k <= 300.
  int64_t expected = 0;
  for (int i = 1; i <= 400; ++i) {
    if (i % 4 == 1 && i % 10 != 0 && (i * 7) % 340 + 1 <= 300) ++expected;
  }
  EXPECT_EQ(Query(SessionOn(2), "SELECT COUNT(*) FROM d.o o JOIN d.t t ON t.id = o.k WHERE o.g = 1"),
            std::vector<std::string>{std::to_string(expected)});
  // 'b0'/'B0' etc. are one key under utf8mb4_general_ci.
  EXPECT_EQ(Query(SessionOn(1), "SELECT COUNT(*) FROM d.o o JOIN d.s x ON x.name = o.ks WHERE o.g >= 0"),
            Query(loader, "SELECT COUNT(*) FROM d.o WHERE ks IS NOT NULL AND ks <> 'zz'"));
}

// 2,500 outer rows, 2,000 passing the filter: two batches of keys (1,024
// at most each), the second partial; each batch's answers land on its own
// rows.
TEST_F(JoinPushdownTest, ManyBatchesAnswerAsTheUnpushedPath) {
  CreateJoinTables();
  exec::Session* on = SessionOn(2);
  exec::Session* off = SessionOn(2);
  Run(off, "SET shale_pushdown = 0");
  Fill(on);
  std::string insert = "INSERT INTO d.o VALUES ";
  int64_t expected = 0;
  for (int i = 1; i <= 2500; ++i) {
    const int k = (i * 13) % 350;  // 0 and 301..349 match nothing
    insert += fmt::format("{}({}, {}, {}, NULL)", i > 1 ? "," : "", i, i % 5, k);
    if (i % 5 != 4 && k >= 1 && k <= 300) ++expected;
  }
  Run(on, insert);
  const std::string q = "SELECT COUNT(*), SUM(t.id), SUM(o.id) FROM d.o o JOIN d.t t ON t.id = o.k WHERE o.g <> 4";
  EXPECT_NE(Plan(on, q).find("[pushed: batched lookup]"), std::string::npos) << Plan(on, q);
  const auto rows = Same(2, on, off, q);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].substr(0, rows[0].find('|')), std::to_string(expected));
  Same(2, on, off, "SELECT o.id, t.v FROM d.o o LEFT JOIN d.t t ON t.id = o.k WHERE o.g <> 4");
}

TEST_F(JoinPushdownTest, TransactionWritesAndLockingReadsKeepTheUnbatchedPath) {
  CreateJoinTables();
  exec::Session* s = SessionOn(1);
  Fill(s);
  FillOuter(s);
  Run(s, "BEGIN");
  Run(s, "UPDATE d.t SET v = v + 1000 WHERE id <= 150");
  Run(s, "DELETE FROM d.t WHERE id BETWEEN 200 AND 220");
  for (const std::string& q : join_queries_) {
    Run(s, "SET shale_pushdown = 1");
    auto with = Query(s, q);
    Run(s, "SET shale_pushdown = 0");
    EXPECT_EQ(with, Query(s, q)) << q;
  }
  Run(s, "SET shale_pushdown = 1");
  // The transaction's updates are seen (a semi-join plans differently).
  EXPECT_EQ(Query(s, "SELECT COUNT(*) FROM d.o o JOIN d.t t ON t.id = o.k WHERE o.g = 1 AND t.v > 1000"),
            Query(s, "SELECT COUNT(*) FROM d.o o WHERE o.g = 1 AND o.k IN (SELECT id FROM d.t WHERE v > 1000)"));
  EXPECT_NE(Query(s, "SELECT COUNT(*) FROM d.o o JOIN d.t t ON t.id = o.k WHERE o.g = 1 AND t.v > 1000"),
            std::vector<std::string>{"0"});
  Run(s, "ROLLBACK");
  Run(s, "BEGIN");
  exec::Session* other = SessionOn(2);
  EXPECT_EQ(Query(s, "SELECT COUNT(*) FROM d.o o JOIN d.t t ON t.id = o.k WHERE o.g = 1 FOR UPDATE"),
            Query(other, "SELECT COUNT(*) FROM d.o o JOIN d.t t ON t.id = o.k WHERE o.g = 1"));
  Run(s, "COMMIT");
}

TEST_F(JoinPushdownTest, StaleEpochIsRefusedWithARetryableError) {
  CreateJoinTables();
  exec::Session* s1 = SessionOn(0);
  Fill(s1);
  FillOuter(s1);
  const std::string q = join_queries_[0];
  // The batched request itself, to a slice of t that node 2 ranks: keys
  // 1..300 (only those the slice holds exist there) with the filter v > 20.
  std::shared_ptr<const catalog::TableDef> t;
  for (auto& table : nodes_[0]->engine->catalog()->AllTables()) {
    if (table->db == "d" && table->name == "t") t = table;
  }
  ASSERT_NE(t, nullptr);
  const catalog::SliceDef* on_n2 = nullptr;
  for (const catalog::SliceDef& def : t->primary.slices) {
    if (def.replicas[0] == "n2") on_n2 = &def;
  }
  ASSERT_NE(on_n2, nullptr);
  std::vector<std::string> keys;
  for (int i = 1; i <= 300; ++i) keys.push_back(catalog::EncodeKey({Value::Int(i)}));
  auto filter = sierra::Expr::Compare(sierra::CompareOp::kGt, sierra::Expr::ColumnRef(2, "v", t->columns[2].type, true),
                                      sierra::Expr::Constant(Value::Int(20)));
  const std::string fragment = exec::SerializeLookupFragment(t, filter);
  std::vector<std::pair<std::string, std::string>> rows;
  nodes_[1]->epoch = 5;  // node 2 has seen a newer cluster metadata epoch
  Status refused = nodes_[0]->data->LookupFiltered("n2", on_n2->id, keys, storage::kLatestSnapshot, fragment, &rows);
  EXPECT_EQ(refused.mysql_code(), 1047) << refused.ToString();
  EXPECT_TRUE(rows.empty());
  Status st = Fail(s1, q);
  EXPECT_EQ(st.mysql_code(), 1047) << st.ToString();
  EXPECT_STREQ(st.sqlstate(), "08S01");
  nodes_[0]->epoch = 5;
  nodes_[2]->epoch = 5;
  ASSERT_TRUE(nodes_[0]->data->LookupFiltered("n2", on_n2->id, keys, storage::kLatestSnapshot, fragment, &rows).ok());
  // Exactly the slice's rows with v > 20, as a scan of it says.
  EXPECT_FALSE(rows.empty());
  for (const auto& [key, value] : rows) {
    Row row;
    ASSERT_TRUE(DecodeRow(value, &row).ok());
    EXPECT_GT(row[2].as_int(), 20);
    EXPECT_EQ(t->primary.SliceForHash(catalog::DistributionHash(t->primary, {row[0]})).id, on_n2->id);
  }
  exec::Session* off = SessionOn(0);
  Run(off, "SET shale_pushdown = 0");
  Same(0, s1, off, q);
}

// Joins on a secondary index's leading column and on a prefix of a
// composite primary key, batched like joins on the whole primary key.
class IndexJoinPushdownTest : public JoinPushdownTest {
 protected:
  // r: an index on k (several rows per key, NULLs), on name (values
  // equal under the default utf8mb4 collation: 'b1', 'B1') and on bn (the
  // same values, utf8mb4_bin); c: a
  // composite primary key (a, b), distributed on a.
  static constexpr const char* kIndexed =
      "CREATE TABLE d.r (id INT PRIMARY KEY, k INT, name VARCHAR(10), w INT, bn VARCHAR(10) COLLATE utf8mb4_bin, "
      "KEY rk (k), KEY rn (name), KEY rb (bn)) SLICES=6";
  static constexpr const char* kComposite = "CREATE TABLE d.c (a INT, b INT, x INT, PRIMARY KEY (a, b)) SLICES=6";

  // r.k of row id (0: NULL): 1..400, about three rows each; o.k of row i.
  static constexpr int kRRows = 1200;
  static int RowK(int id) { return id % 17 == 0 ? 0 : (id * 7) % 400 + 1; }
  static int OuterK(int i) { return i % 10 == 0 ? 0 : (i * 7) % 340 + 1; }

  void CreateIndexJoinTables() {
    CreatePlacedTable(kOuter, 2, "o");
    CreatePlacedTable(kStrings, 2, "s");
    CreatePlacedTable(kIndexed, 2, "r");
    CreatePlacedTable(kComposite, 2, "c");
  }
  void FillIndexed(exec::Session* s) {
    FillOuter(s);
    std::string insert = "INSERT INTO d.r VALUES ";
    for (int id = 1; id <= kRRows; ++id) {
      const std::string k = RowK(id) == 0 ? "NULL" : std::to_string(RowK(id));
      const std::string name = id % 9 == 0 ? "NULL" : fmt::format("'{}{}'", id % 4 < 2 ? 'b' : 'B', id % 5);
      insert += fmt::format("{}({}, {}, {}, {}, {})", id > 1 ? "," : "", id, k, name, id % 100, name);
    }
    Run(s, insert);
    insert = "INSERT INTO d.c VALUES ";
    for (int a = 1; a <= 300; ++a) {
      for (int b = 1; b <= 3; ++b) insert += fmt::format("{}({}, {}, {})", a + b > 2 ? "," : "", a, b, (a * b) % 7);
    }
    Run(s, insert);
  }
  // Join rows of o (o.g = g) with r on r.k = o.k, computed here.
  static int64_t ExpectedIndexJoin(int g) {
    int64_t n = 0;
    for (int i = 1; i <= 400; ++i) {
      if (i % 4 != g || OuterK(i) == 0) continue;
      for (int id = 1; id <= kRRows; ++id) n += RowK(id) == OuterK(i);
    }
    return n;
  }

  // The first of them, and 5, are selective (about 25 outer rows): they
  // move fewer rows than a hash join reading r's remote slices whole.
  const std::vector<std::string> index_queries_ = {
      "SELECT o.id, r.id, r.w FROM d.o o JOIN d.r r ON r.k = o.k WHERE o.g = 1 AND o.id <= 100 ORDER BY o.id, r.id",
      "SELECT o.id, r.id, r.name FROM d.o o LEFT JOIN d.r r ON r.k = o.k WHERE o.g = 2 AND o.id <= 100 "
      "ORDER BY o.id, r.id",
      "SELECT COUNT(*), SUM(r.w), SUM(o.id) FROM d.o o JOIN d.r r ON r.k = o.k WHERE o.g <> 3",
      "SELECT o.id, r.id, r.w FROM d.o o JOIN d.r r ON r.k = o.k WHERE o.g = 1 AND r.w > 40 ORDER BY o.id, r.id",
      "SELECT o.id, r.id, r.w FROM d.o o LEFT JOIN d.r r ON r.k = o.k AND r.w < 30 WHERE o.g = 0 ORDER BY o.id, r.id",
      // Covering: only the index key and the primary key are read.
      "SELECT o.id, r.k, r.id FROM d.o o JOIN d.r r ON r.k = o.k WHERE o.g = 3 AND o.id <= 100 ORDER BY o.id, r.id",
      // Collation ties: 'b1' and 'B1' are one key of rn.
      "SELECT o.id, r.id FROM d.o o JOIN d.r r ON r.name = o.ks WHERE o.g >= 1 AND o.id < 12 ORDER BY o.id, r.id",
      "SELECT COUNT(*) FROM d.o o JOIN d.r r ON r.name = o.ks WHERE o.g >= 1",
  };
  // The first two are selective.
  const std::vector<std::string> prefix_queries_ = {
      "SELECT o.id, c.a, c.b, c.x FROM d.o o JOIN d.c c ON c.a = o.k WHERE o.g = 1 ORDER BY o.id, c.b",
      "SELECT o.id, c.b FROM d.o o LEFT JOIN d.c c ON c.a = o.k AND c.x > 3 WHERE o.g = 2 ORDER BY o.id, c.b",
      "SELECT COUNT(*), SUM(c.x) FROM d.o o JOIN d.c c ON c.a = o.k WHERE o.g <> 0 AND c.b <> 2",
  };

  // Every query answers through every node as with shale_pushdown = 0 (a
  // hash join) and is marked `mark` in EXPLAIN; those in `selective` move
  // fewer rows. (Without statistics the planner batches unselective joins
  // too, which can move more: every key out, every entry and row back.)
  void ExpectBatched(const std::vector<std::string>& queries, const std::string& mark,
                     const std::set<size_t>& selective) {
    std::vector<std::vector<std::string>> first;
    for (int n = 0; n < 3; ++n) {
      exec::Session* on = SessionOn(n);
      exec::Session* off = SessionOn(n);
      Run(off, "SET shale_pushdown = 0");
      std::vector<std::vector<std::string>> answers;
      for (size_t i = 0; i < queries.size(); ++i) {
        const std::string& q = queries[i];
        EXPECT_NE(Plan(on, q).find(mark), std::string::npos) << q << "\n" << Plan(on, q);
        EXPECT_EQ(Plan(off, q).find("batched lookup"), std::string::npos) << q;
        uint64_t moved_on = 0, moved_off = 0;
        answers.push_back(Same(n, on, off, q, &moved_on, &moved_off));
        EXPECT_GT(moved_off, 300u) << q;
        if (selective.count(i)) {
          EXPECT_LT(moved_on, moved_off) << q << " through " << nodes_[n]->name;
        }
      }
      if (n == 0) first = answers;
      EXPECT_EQ(answers, first) << "through " << nodes_[n]->name;
    }
  }
};

TEST_F(IndexJoinPushdownTest, IndexJoinsAnswerAsTheUnpushedPathThroughEveryNode) {
  CreateIndexJoinTables();
  exec::Session* loader = SessionOn(0);
  FillIndexed(loader);
  ExpectBatched({index_queries_.begin(), index_queries_.begin() + 6}, "[pushed: batched lookup (index rk",
                {0, 1, 5});
  ExpectBatched({index_queries_.begin() + 6, index_queries_.end()}, "[pushed: batched lookup (index rn)", {});
  EXPECT_NE(Plan(loader, index_queries_[3]).find("[pushed: batched lookup (index rk), filter]"), std::string::npos);
  EXPECT_NE(Plan(loader, index_queries_[6]).find("[pushed: batched lookup (index rn)]"), std::string::npos);
  // Against numbers computed here (NULL keys match nothing, duplicate
  // outer keys each get every match).
  for (int g = 0; g < 4; ++g) {
    EXPECT_EQ(Query(SessionOn(g % 3), fmt::format("SELECT COUNT(*) FROM d.o o JOIN d.r r ON r.k = o.k WHERE o.g = {}", g)),
              std::vector<std::string>{std::to_string(ExpectedIndexJoin(g))})
        << g;
  }
  EXPECT_GT(ExpectedIndexJoin(1), 100);
  // One name key per case-insensitive value: each o row with 'bN' or 'BN'
  // matches every r row with 'bN' or 'BN'.
  int64_t ties = 0;
  for (int i = 1; i <= 400; ++i) {
    if (i % 4 < 1 || i % 6 == 0 || i % 8 == 0) continue;
    for (int id = 1; id <= kRRows; ++id) ties += id % 9 != 0 && id % 5 == i % 3;
  }
  EXPECT_EQ(Query(SessionOn(1), index_queries_[7]), std::vector<std::string>{std::to_string(ties)});
}

// A join reading only rk's key and the primary key (signed integers) makes
// its rows from the index entries: no second hop, fewer rows moved than the
// same join reading w, and the same answers.
TEST_F(IndexJoinPushdownTest, CoveringIndexJoinsSkipTheRowFetch) {
  CreateIndexJoinTables();
  FillIndexed(SessionOn(0));
  const std::string covering = "SELECT o.id, r.id, r.k FROM d.o o JOIN d.r r ON r.k = o.k WHERE o.g = 1 ORDER BY o.id, r.id";
  const std::string fetching =
      "SELECT o.id, r.id, r.k, r.w FROM d.o o JOIN d.r r ON r.k = o.k WHERE o.g = 1 ORDER BY o.id, r.id";
  const std::string filtered =
      "SELECT o.id, r.id FROM d.o o JOIN d.r r ON r.k = o.k WHERE o.g = 2 AND r.id > 600 ORDER BY o.id, r.id";
  const std::string counted = "SELECT COUNT(*) FROM d.o o JOIN d.r r ON r.k = o.k WHERE o.g = 3";
  for (int n = 0; n < 3; ++n) {
    exec::Session* on = SessionOn(n);
    exec::Session* off = SessionOn(n);
    Run(off, "SET shale_pushdown = 0");
    EXPECT_NE(Plan(on, covering).find("[pushed: batched lookup (index rk, covering)]"), std::string::npos)
        << Plan(on, covering);
    EXPECT_NE(Plan(on, fetching).find("[pushed: batched lookup (index rk)]"), std::string::npos) << Plan(on, fetching);
    EXPECT_NE(Plan(on, filtered).find("[pushed: batched lookup (index rk, covering), filter]"), std::string::npos)
        << Plan(on, filtered);
    EXPECT_NE(Plan(on, counted).find("(index rk, covering)"), std::string::npos) << Plan(on, counted);
    uint64_t moved_covering = 0, moved_fetching = 0;
    const auto rows = Same(n, on, off, covering, &moved_covering);
    const auto fetched = Same(n, on, off, fetching, &moved_fetching);
    EXPECT_LT(moved_covering, moved_fetching) << nodes_[n]->name;
    ASSERT_EQ(rows.size(), fetched.size());
    EXPECT_GT(rows.size(), 100u);
    for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(rows[i], fetched[i].substr(0, fetched[i].rfind('|')));
    EXPECT_FALSE(Same(n, on, off, filtered).empty());
    EXPECT_EQ(Same(n, on, off, counted), std::vector<std::string>{std::to_string(ExpectedIndexJoin(3))});
  }
}

TEST_F(IndexJoinPushdownTest, KeyPrefixJoinsAnswerAsTheUnpushedPathThroughEveryNode) {
  CreateIndexJoinTables();
  FillIndexed(SessionOn(0));
  ExpectBatched(prefix_queries_, "[pushed: batched lookup (key prefix)", {0, 1});
  // Every row of each matching prefix: 3 per o.k in 1..300.
  int64_t expected = 0;
  for (int i = 1; i <= 400; ++i) expected += i % 4 == 1 && OuterK(i) != 0 && OuterK(i) <= 300 ? 3 : 0;
  EXPECT_EQ(Query(SessionOn(2), "SELECT COUNT(*) FROM d.o o JOIN d.c c ON c.a = o.k WHERE o.g = 1"),
            std::vector<std::string>{std::to_string(expected)});
}

TEST_F(IndexJoinPushdownTest, TransactionReadsItsOwnWritesThroughBatchedIndexJoins) {
  CreateIndexJoinTables();
  exec::Session* s = SessionOn(1);
  FillIndexed(s);
  Run(s, "BEGIN");
  // Rows only (w is in no index): the index is read remotely, these rows here.
  Run(s, "UPDATE d.r SET w = w + 1000 WHERE id <= 150");
  // Index entries too: their slices are read through the transaction.
  Run(s, "UPDATE d.r SET k = 8 WHERE id BETWEEN 200 AND 210");
  Run(s, "DELETE FROM d.r WHERE id BETWEEN 250 AND 260");
  Run(s, "INSERT INTO d.r VALUES (5001, 8, 'b1', 1, 'b1'), (5002, 9, NULL, 2, NULL)");
  Run(s, "UPDATE d.c SET x = x + 100 WHERE a <= 50");
  Run(s, "DELETE FROM d.c WHERE a BETWEEN 60 AND 70 AND b = 1");
  std::vector<std::string> queries = index_queries_;
  queries.insert(queries.end(), prefix_queries_.begin(), prefix_queries_.end());
  for (const std::string& q : queries) {
    Run(s, "SET shale_pushdown = 1");
    EXPECT_NE(Plan(s, q).find("[pushed: batched lookup ("), std::string::npos) << q;
    auto with = Query(s, q);
    Run(s, "SET shale_pushdown = 0");
    EXPECT_EQ(with, Query(s, q)) << q;
  }
  Run(s, "SET shale_pushdown = 1");
  // o.id 1 has k 8 and g 1: it meets the inserted row and the re-keyed ones.
  std::vector<std::string> eights;
  for (int id = 1; id <= kRRows; ++id) {
    if ((RowK(id) == 8 || (id >= 200 && id <= 210)) && !(id >= 250 && id <= 260)) eights.push_back(std::to_string(id));
  }
  eights.push_back("5001");
  EXPECT_EQ(Query(s, "SELECT r.id FROM d.o o JOIN d.r r ON r.k = o.k WHERE o.g = 1 AND o.id = 1 ORDER BY r.id"),
            eights);
  int64_t updated = 0;
  for (int i = 1; i <= 400; ++i) {
    if (i % 4 != 1 || OuterK(i) == 0) continue;
    for (int id = 1; id <= 150; ++id) updated += RowK(id) == OuterK(i);
  }
  EXPECT_EQ(Query(s, "SELECT COUNT(*) FROM d.o o JOIN d.r r ON r.k = o.k WHERE o.g = 1 AND r.w >= 1000"),
            std::vector<std::string>{std::to_string(updated)});
  EXPECT_GT(updated, 0);
  Run(s, "ROLLBACK");
  // Locking reads push nothing, and answer the same.
  Run(s, "BEGIN");
  const std::string q = "SELECT COUNT(*) FROM d.o o JOIN d.r r ON r.k = o.k WHERE o.g = 1";
  EXPECT_EQ(Query(s, q + " FOR UPDATE"), std::vector<std::string>{std::to_string(ExpectedIndexJoin(1))});
  Run(s, "COMMIT");
}

// An index's keys answer an equality only under the collation they were
// made with: a join compared under another one is not batched.
TEST_F(IndexJoinPushdownTest, KeysComparedUnderAnotherCollationAreNotBatched) {
  CreateIndexJoinTables();
  FillIndexed(SessionOn(0));
  exec::Session* on = SessionOn(1);
  exec::Session* off = SessionOn(1);
  Run(off, "SET shale_pushdown = 0");
  // ks is utf8mb4_general_ci, bn utf8mb4_bin: the _bin collation wins, so
  // rb's keys answer.
  const std::string exact = "SELECT COUNT(*) FROM d.o o JOIN d.r r ON r.bn = o.ks WHERE o.g >= 1";
  EXPECT_NE(Plan(on, exact).find("[pushed: batched lookup (index rb)]"), std::string::npos) << Plan(on, exact);
  // An explicit collation wins: rb's (case-sensitive) keys would miss
  // 'B1' for 'b1', rn's would find too many (the ON check would drop them).
  const std::string folded =
      "SELECT COUNT(*) FROM d.o o JOIN d.r r ON r.bn = o.ks COLLATE utf8mb4_general_ci WHERE o.g >= 1";
  const std::string binary = "SELECT COUNT(*) FROM d.o o JOIN d.r r ON r.name = o.ks COLLATE utf8mb4_bin WHERE o.g >= 1";
  EXPECT_EQ(Plan(on, folded).find("batched lookup"), std::string::npos) << Plan(on, folded);
  EXPECT_EQ(Plan(on, binary).find("batched lookup"), std::string::npos) << Plan(on, binary);
  int64_t ties = 0, same_case = 0;
  for (int i = 1; i <= 400; ++i) {
    if (i % 4 < 1 || i % 6 == 0 || i % 8 == 0) continue;
    for (int id = 1; id <= kRRows; ++id) {
      if (id % 9 == 0 || id % 5 != i % 3) continue;
      ++ties;
      same_case += (i % 2 != 0) == (id % 4 < 2);
    }
  }
  EXPECT_LT(same_case, ties);
  EXPECT_EQ(Same(1, on, off, exact), std::vector<std::string>{std::to_string(same_case)});
  EXPECT_EQ(Same(1, on, off, folded), std::vector<std::string>{std::to_string(ties)});
  EXPECT_EQ(Same(1, on, off, binary), std::vector<std::string>{std::to_string(same_case)});
}

// The receiver runs no filter over an index's entries (they are not rows).
TEST_F(IndexJoinPushdownTest, AFilterOverIndexEntriesIsRefused) {
  CreateIndexJoinTables();
  FillIndexed(SessionOn(0));
  auto r = nodes_[0]->engine->catalog()->GetTable("d", "r");
  ASSERT_TRUE(r.ok());
  const catalog::TableDef& t = **r;
  const catalog::SliceDef* on_n2 = nullptr;
  for (const catalog::SliceDef& def : t.indexes[0].slices) {
    if (def.replicas[0] == "n2") on_n2 = &def;
  }
  ASSERT_NE(on_n2, nullptr);
  std::vector<std::string> prefixes;
  for (int k = 1; k <= 400; ++k) prefixes.push_back(catalog::EncodeKey({Value::Int(k)}));
  auto filter = sierra::Expr::Compare(sierra::CompareOp::kGt, sierra::Expr::ColumnRef(0, "id", t.columns[0].type, false),
                                      sierra::Expr::Constant(Value::Int(20)));
  std::vector<std::pair<std::string, std::string>> entries;
  Status refused = nodes_[0]->data->LookupPrefixes("n2", on_n2->id, prefixes, storage::kLatestSnapshot,
                                                   exec::SerializeLookupFragment(*r, filter), &entries);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument) << refused.ToString();
  ASSERT_TRUE(nodes_[0]->data->LookupPrefixes("n2", on_n2->id, prefixes, storage::kLatestSnapshot,
                                              exec::SerializeLookupFragment(*r, nullptr), &entries)
                  .ok());
  // Exactly the slice's entries, prefix after prefix.
  size_t expected = 0;
  for (int id = 1; id <= kRRows; ++id) {
    if (RowK(id) == 0) continue;
    expected += t.indexes[0].SliceForHash(catalog::DistributionHash(t.indexes[0], {Value::Int(RowK(id))})).id == on_n2->id;
  }
  EXPECT_GT(expected, 0u);
  EXPECT_EQ(entries.size(), expected);
  EXPECT_TRUE(std::is_sorted(entries.begin(), entries.end()));
}

// Pages of 7 entries: a prefix's entries span pages and the lookup resumes
// inside it.
class IndexJoinSmallPagesTest : public IndexJoinPushdownTest {
 protected:
  uint32_t FragmentPageRows() const override { return 7; }
};

TEST_F(IndexJoinSmallPagesTest, PagedPrefixLookupsAnswerAsTheUnpushedPath) {
  CreateIndexJoinTables();
  FillIndexed(SessionOn(0));
  ExpectBatched({index_queries_[0], index_queries_[2], index_queries_[7]}, "[pushed: batched lookup (index r", {0});
  ExpectBatched(prefix_queries_, "[pushed: batched lookup (key prefix)", {0, 1});
  EXPECT_EQ(Query(SessionOn(1), "SELECT COUNT(*) FROM d.o o JOIN d.r r ON r.k = o.k WHERE o.g = 2"),
            std::vector<std::string>{std::to_string(ExpectedIndexJoin(2))});
}

// Fragment pages of 7 stored rows and at most 2 groups: a slice's partials
// arrive over many pages (merged like other slices'), and filtered pages
// often pass no row (the next page starts after the last key examined).
class PushdownSmallPagesTest : public PushdownTest {
 protected:
  uint32_t FragmentPageRows() const override { return 7; }
  uint32_t FragmentPageGroups() const override { return 2; }
};

TEST_F(PushdownSmallPagesTest, PagedFragmentsAnswerAsTheUnpushedPath) {
  CreatePlacedTable(kTable);
  std::vector<exec::Session*> on, off;
  for (int n = 0; n < 3; ++n) {
    on.push_back(SessionOn(n));
    off.push_back(SessionOn(n));
    Run(off.back(), "SET shale_pushdown = 0");
  }
  Fill(on[0]);
  ExpectEveryQuerySame(on, off);
  EXPECT_EQ(Query(on[2], "SELECT SUM(d) FROM d.t"), std::vector<std::string>{ExpectedSumD()});
  // A filter no row passes: every page is empty, the scan still ends.
  EXPECT_TRUE(Same(1, on[1], off[1], "SELECT id FROM d.t WHERE v > 100000").empty());
}

TEST_F(DataPathTest, ParticipantStoppedBetweenPrepareAndCommitResolvesToCommit) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  exec::Session* s1 = SessionOn(0);
  Run(s1, "INSERT INTO d.t VALUES (1, 1)");
  // Stop node 3's server once every participant has prepared (the decider
  // is another node, so the commit is still decided).
  TestNode* n3 = nodes_[2].get();
  nodes_[0]->engine->txn()->TEST_SetAfterPrepare([&] { n3->rpc->Shutdown(); });
  std::string insert = InsertRows(2, 30);
  auto results = Exec(s1, insert);
  nodes_[0]->engine->txn()->TEST_SetAfterPrepare(nullptr);
  ASSERT_EQ(results.size(), 1u);
  if (!results[0].ok()) {
    // Node 3 held the decision: unknown to the coordinator, the participants resolve it.
    EXPECT_EQ(results[0].status().mysql_code(), 1180) << results[0].status().ToString();
  }
  EXPECT_EQ(n3->data->prepared_count(), 1u);
  // Node 3 comes back and resolves from the decider's record (which may be
  // recorded at node 3 as the backup: the others' channels to it reconnect
  // within moments, so resolve until done, with a deadline).
  StartServer(n3, *AddressOf(n3->name));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  auto pending = [&] {
    size_t n = 0;
    for (auto& node : nodes_) n += node->data->prepared_count();
    return n;
  };
  while (pending() > 0 && std::chrono::steady_clock::now() < deadline) {
    for (auto& n : nodes_) n->data->TEST_ResolveNow();
    if (pending() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (auto& n : nodes_) EXPECT_EQ(n->data->prepared_count(), 0u) << n->name;
  const std::vector<std::string> want = {results[0].ok() ? "30" : Query(s1, "SELECT COUNT(*) FROM d.t")[0]};
  for (int n = 0; n < 3; ++n) EXPECT_EQ(Query(SessionOn(n), "SELECT COUNT(*) FROM d.t"), want);
  if (results[0].ok()) {
    EXPECT_EQ(want[0], "30");
  }
  ExpectReplicasIdentical();
}

TEST_F(DataPathTest, CoordinatorLostBeforeDecisionResolvesToAbort) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  exec::Session* s1 = SessionOn(0);
  Run(s1, "INSERT INTO d.t VALUES (1, 1)");
  // After prepare node 1 (the coordinator) loses every other node: its
  // commit decision never reaches the decider.
  nodes_[0]->engine->txn()->TEST_SetAfterPrepare([&] {
    nodes_[0]->data->TEST_SetUnreachable("n2", true);
    nodes_[0]->data->TEST_SetUnreachable("n3", true);
  });
  std::string insert = InsertRows(2, 30);
  Status st = Fail(s1, insert);
  EXPECT_EQ(st.mysql_code(), 1180) << st.ToString();
  nodes_[0]->engine->txn()->TEST_SetAfterPrepare(nullptr);
  // The other participants give up on the silent coordinator: they are a
  // majority of the acceptors without it (cut off both ways), so their
  // resolvers see no accepted value and choose abort; everyone discards.
  // (Reaching the coordinator's own acceptor, which accepted commit at
  // ballot 0, a resolver must choose commit instead: either outcome is
  // one outcome, but this test pins the one without it.)
  nodes_[1]->data->TEST_SetUnreachable("n1", true);
  nodes_[2]->data->TEST_SetUnreachable("n1", true);
  nodes_[1]->data->TEST_ResolveNow();
  nodes_[2]->data->TEST_ResolveNow();
  nodes_[1]->data->TEST_SetUnreachable("n1", false);
  nodes_[2]->data->TEST_SetUnreachable("n1", false);
  nodes_[0]->data->TEST_SetUnreachable("n2", false);
  nodes_[0]->data->TEST_SetUnreachable("n3", false);
  nodes_[0]->data->TEST_ResolveNow();
  for (auto& n : nodes_) EXPECT_EQ(n->data->prepared_count(), 0u) << n->name;
  for (int n = 0; n < 3; ++n) {
    EXPECT_EQ(Query(SessionOn(n), "SELECT id FROM d.t"), std::vector<std::string>{"1"}) << nodes_[n]->name;
  }
  ExpectReplicasIdentical();
  for (auto& n : nodes_) EXPECT_EQ(n->engine->txn()->locks()->locks_held(), 0u) << n->name;
  // The table takes writes again.
  Run(s1, "INSERT INTO d.t VALUES (2, 2)");
  EXPECT_EQ(Query(SessionOn(1), "SELECT COUNT(*) FROM d.t"), std::vector<std::string>{"2"});
}

// The coordinator's accept at ballot 0 goes to a majority of the acceptors
// first (itself and the list's next one): the third is spared its synced
// record and its message while those two answer, and is asked as soon as
// one of them fails, so the commit is still chosen by a majority.
TEST_F(DataPathTest, TheCoordinatorsAcceptGoesToAMajorityFirst) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  exec::Session* s1 = SessionOn(0);
  nodes_[0]->data->TEST_PauseForgets(true);  // the decision records stay, to be counted
  std::vector<txn::DeciderPair> decided;
  nodes_[0]->engine->txn()->TEST_SetAfterDecide([&](const txn::DeciderPair& d) { decided.push_back(d); });
  auto index = [&](const std::string& name) {
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (nodes_[i]->name == name) return static_cast<int>(i);
    }
    ADD_FAILURE() << name;
    return 0;
  };
  auto records = [&](const std::string& name) { return DecisionRecords(index(name)); };
  Run(s1, InsertRows(1, 30));  // every node a participant: two-phase
  nodes_[0]->data->TEST_DrainPaxosCalls();
  ASSERT_EQ(decided.size(), 1u);
  const std::vector<std::string> acceptors = decided[0].acceptors;
  ASSERT_EQ(acceptors.size(), 3u);
  ASSERT_EQ(acceptors[0], "n1");
  EXPECT_EQ(records(acceptors[0]), 1u);
  EXPECT_EQ(records(acceptors[1]), 1u);
  EXPECT_EQ(records(acceptors[2]), 0u) << "the third acceptor was asked";

  // The second acceptor is cut off from the coordinator after the prepare:
  // its accept fails at once, the third is asked, and commit is chosen.
  nodes_[0]->engine->txn()->TEST_SetAfterPrepare([&] { nodes_[0]->data->TEST_SetUnreachable(acceptors[1], true); });
  Run(s1, InsertRows(31, 60));
  nodes_[0]->engine->txn()->TEST_SetAfterPrepare(nullptr);
  nodes_[0]->engine->txn()->TEST_SetAfterDecide(nullptr);
  nodes_[0]->data->TEST_SetUnreachable(acceptors[1], false);
  nodes_[0]->data->TEST_DrainPaxosCalls();
  ASSERT_EQ(decided.size(), 2u);
  ASSERT_EQ(decided[1].acceptors, acceptors);
  EXPECT_EQ(records(acceptors[0]), 2u);
  EXPECT_EQ(records(acceptors[2]), 1u);
  // The cut-off participant missed Finish: it resolves from the acceptors.
  nodes_[index(acceptors[1])]->data->TEST_ResolveNow();
  ExpectSettled("60|1830");
  nodes_[0]->data->TEST_PauseForgets(false);
}

// The commit decision survives the loss of any one node, its coordinator
// included (issue 16): after commit was chosen, node `lost` is stopped and
// removed from the membership and the coordinator is cut off before the
// other participants hear the outcome; they resolve it from the two
// acceptors left. Then a second failure: one of those two stops and `lost`
// comes back: it resolves its own share, and a fresh resolver's ballot
// there, to the same outcome (no second one).
class DecisionSurvivesTest : public DataPathTest {
 protected:
  void LoseAfterTheDecision(int lost) {
    CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
    exec::Session* s1 = SessionOn(0);
    txn::DeciderPair deciders;
    TestNode* gone = nodes_[lost].get();
    std::string gone_address;
    nodes_[0]->engine->txn()->TEST_SetAfterDecide([&](const txn::DeciderPair& d) {
      deciders = d;
      gone->rpc->Shutdown();
      gone_address = *AddressOf(gone->name);
      EraseAddress(gone->name);  // removed from the membership
      nodes_[0]->data->TEST_SetUnreachable("n2", true);
      nodes_[0]->data->TEST_SetUnreachable("n3", true);
    });
    std::string insert = InsertRows(1, 30);
    auto results = Exec(s1, insert);
    nodes_[0]->engine->txn()->TEST_SetAfterDecide(nullptr);
    ASSERT_EQ(results.size(), 1u);
    ASSERT_TRUE(results[0].ok()) << results[0].status().ToString();  // chosen: committed
    ASSERT_EQ(deciders.acceptors, (std::vector<std::string>{"n1", "n2", "n3"}));
    // n2 and n3 missed Finish (n1 applied its own share).
    for (int i : {1, 2}) EXPECT_EQ(nodes_[i]->data->prepared_count(), 1u) << nodes_[i]->name;
    // The participants still up resolve from the two acceptors left.
    for (int i : {1, 2}) {
      if (i == lost) continue;
      nodes_[i]->data->TEST_ResolveNow();
      EXPECT_EQ(nodes_[i]->data->prepared_count(), 0u) << nodes_[i]->name;
      EXPECT_EQ(nodes_[i]->engine->txn()->locks()->locks_held(), 0u) << nodes_[i]->name;
    }
    // The second failure: another acceptor stops (a member that does not
    // answer), and the lost node is back.
    const int second = lost == 2 ? 1 : 2;
    TestNode* stopped = nodes_[second].get();
    const std::string stopped_address = *AddressOf(stopped->name);
    stopped->rpc->Shutdown();
    StartServer(gone, gone_address);
    nodes_[0]->data->TEST_SetUnreachable("n2", false);
    nodes_[0]->data->TEST_SetUnreachable("n3", false);
    gone->data->TEST_ResolveNow();
    EXPECT_EQ(gone->data->prepared_count(), 0u) << gone->name;
    txn::TxnKey key;
    AwaitDecisionRecords();
    AcceptedValues(&key);
    ASSERT_EQ(key.coordinator, "n1");
    Result<bool> again = gone->data->Decide(deciders, key, /*commit=*/false, 0);
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    EXPECT_TRUE(*again) << "a fresh ballot chose the same outcome";
    StartServer(stopped, stopped_address);
    AwaitDecisionRecords();
    const std::set<std::string> accepted = AcceptedValues();
    ASSERT_EQ(accepted.size(), 1u);
    EXPECT_EQ(accepted.begin()->rfind("commit at ", 0), 0u) << *accepted.begin();
    ExpectSettled("30|465");
  }
};

TEST_F(DecisionSurvivesTest, TheLossOfTheCoordinator) { LoseAfterTheDecision(0); }
TEST_F(DecisionSurvivesTest, TheLossOfAnotherAcceptor) { LoseAfterTheDecision(1); }
TEST_F(DecisionSurvivesTest, TheLossOfTheThirdAcceptor) { LoseAfterTheDecision(2); }

// An outcome needs a majority of the acceptors: a resolver that reaches one
// of three learns nothing; with two it has abort chosen, and a coordinator
// whose commit (ballot 0) comes later learns abort.
TEST_F(DataPathTest, ResolverNeedsAMajorityOfTheAcceptors) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  const txn::TxnKey k{"n1", 999999};
  txn::DeciderPair d;
  d.acceptors = {"n1", "n2", "n3"};
  d.participants = {"n1", "n2", "n3"};
  SliceService* n3 = nodes_[2]->data.get();
  n3->TEST_SetUnreachable("n1", true);
  n3->TEST_SetUnreachable("n2", true);
  Result<bool> r = n3->Decide(d, k, /*commit=*/false, 0);
  EXPECT_FALSE(r.ok());
  n3->TEST_SetUnreachable("n2", false);
  r = n3->Decide(d, k, /*commit=*/false, 0);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(*r);
  r = nodes_[0]->data->Decide(d, k, /*commit=*/true, 7);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(*r) << "the coordinator's late commit learns abort";
  n3->TEST_SetUnreachable("n1", false);
  AwaitDecisionRecords();
  EXPECT_EQ(AcceptedValues(), std::set<std::string>{"abort"});
}

// Records from before Paxos commit (a prepared record naming a decider and
// a backup, no acceptors) are still resolved the old way.
// While the decider is a member, its backup does not answer in its place:
// the record is reached only through the decider.
TEST_F(DataPathTest, BackupAnswersOnlyOnceTheDeciderLeft) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  SliceService* n3 = nodes_[2]->data.get();
  const txn::TxnKey k{"n1", 999999};
  txn::DeciderPair only_backup;
  only_backup.decider = "n2";
  only_backup.backup = "n3";
  // The decider n2 cannot be reached but is a member: n3 refuses.
  nodes_[2]->data->TEST_SetUnreachable("n2", true);
  Result<bool> r = n3->Decide(only_backup, k, /*commit=*/false, 0);
  EXPECT_FALSE(r.ok());
  // n2 left the cluster: n3 records (abort) and answers.
  EraseAddress("n2");
  r = n3->Decide(only_backup, k, /*commit=*/false, 0);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(*r);
  // A later commit request gets the recorded abort (first one wins).
  txn::DeciderPair alone;
  alone.decider = "n3";
  r = n3->Decide(alone, k, /*commit=*/true, 7);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(*r);
}

TEST_F(DataPathTest, PreparedTransactionSurvivesParticipantRestart) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  exec::Session* s1 = SessionOn(0);
  TestNode* n2 = nodes_[1].get();
  // Node 2 prepares, then "crashes" (its SliceService is reopened from its
  // MetaStore) before it hears the outcome.
  nodes_[0]->engine->txn()->TEST_SetAfterPrepare([&] { nodes_[0]->data->TEST_SetUnreachable("n2", true); });
  auto results = Exec(s1, "INSERT INTO d.t VALUES (1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6)");
  nodes_[0]->engine->txn()->TEST_SetAfterPrepare(nullptr);
  nodes_[0]->data->TEST_SetUnreachable("n2", false);
  ASSERT_EQ(results.size(), 1u);
  RestartDataPath(n2, [] {});
  const size_t waiting = n2->data->prepared_count();
  for (auto& n : nodes_) n->data->TEST_ResolveNow();
  EXPECT_EQ(n2->data->prepared_count(), 0u);
  const std::string count = results[0].ok() ? "6" : "0";
  if (results[0].ok()) {
    EXPECT_EQ(waiting, 1u);
  }
  for (int n = 0; n < 3; ++n) EXPECT_EQ(Query(SessionOn(n), "SELECT COUNT(*) FROM d.t"), std::vector<std::string>{count});
  ExpectReplicasIdentical();
}

// A participant that missed its Finish(commit) and restarted (its report
// of the prepared transaction went with it, so the watermark may pass the
// commit) does not serve a read at or above the commit's timestamp from
// its replica before its share is applied: the read waits for the
// resolution. Before, it answered from the replica, and a snapshot saw the
// commit's other shares but not this one (issue 16's Jepsen bank run with
// kills: a transfer's credit without its debit).
TEST_F(DataPathTest, AReadAtOrAboveAPreparedShareWaitsForItAfterARestart) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  exec::Session* s1 = SessionOn(0);
  TestNode* n2 = nodes_[1].get();
  nodes_[0]->engine->txn()->TEST_SetAfterDecide(
      [&](const txn::DeciderPair&) { nodes_[0]->data->TEST_SetUnreachable("n2", true); });
  auto results = Exec(s1, InsertRows(1, 30));
  nodes_[0]->engine->txn()->TEST_SetAfterDecide(nullptr);
  nodes_[0]->data->TEST_SetUnreachable("n2", false);
  ASSERT_EQ(results.size(), 1u);
  ASSERT_TRUE(results[0].ok()) << results[0].status().ToString();  // chosen: committed
  RestartDataPath(n2, [] {});
  ASSERT_EQ(n2->data->prepared_count(), 1u);
  PrepareRequest record;
  ASSERT_TRUE(n2->engine->meta()
                  ->Scan("txn/prepared/",
                         [&](std::string_view, std::string_view v) {
                           return !record.ParseFromArray(v.data(), static_cast<int>(v.size()));
                         })
                  .ok());
  storage::SliceId slice = 0;
  std::string key, want;
  for (const SliceWritesPb& w : record.writes()) {
    for (int i = 0; i < w.keys_size(); ++i) {
      if (!w.deletes(i)) {
        slice = w.slice();
        key = w.keys(i);
        want = w.values(i);
      }
    }
  }
  ASSERT_FALSE(key.empty());
  const auto start = std::chrono::steady_clock::now();
  std::thread resolve([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    n2->data->TEST_ResolveNow();
  });
  std::string value;
  Status got = nodes_[0]->data->Get("n2", slice, key, record.commit_ts(), &value);
  const auto waited = std::chrono::steady_clock::now() - start;
  resolve.join();
  ASSERT_TRUE(got.ok()) << got.ToString() << " (a committed row read as missing: the commit seen in part)";
  EXPECT_EQ(value, want);
  EXPECT_GE(waited, std::chrono::milliseconds(400));
  EXPECT_EQ(n2->data->prepared_count(), 0u);
  for (int n = 0; n < 3; ++n) EXPECT_EQ(Query(SessionOn(n), "SELECT COUNT(*) FROM d.t"), std::vector<std::string>{"30"});
  ExpectReplicasIdentical();
}

// A transaction holding a row lock at another node whose process restarts
// (its locks go with it) is not given the lock afresh by its next request
// there: another transaction may have written the row in between, and the
// first would read past that write while it believes it held the row all
// along (issue 16's Jepsen append run with kills: a transaction's two
// SELECT ... FOR UPDATE of one row returned different lists). It is rolled
// back with the retryable 1047.
TEST_F(DataPathTest, LocksLostWithARestartedNodeAreNotTakenAfresh) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  exec::Session* s1 = SessionOn(0);
  Run(s1, InsertRows(1, 30));
  int row = -1, ranking = -1;
  for (int id = 1; id <= 30 && row < 0; ++id) {
    Run(s1, "BEGIN");
    ASSERT_EQ(Query(s1, fmt::format("SELECT n FROM d.t WHERE id = {} FOR UPDATE", id)).size(), 1u);
    for (int i = 1; i < 3; ++i) {
      if (nodes_[i]->engine->txn()->locks()->locks_held() > 0) {
        row = id;
        ranking = i;
      }
    }
    if (row < 0) Run(s1, "ROLLBACK");
  }
  ASSERT_GE(row, 0) << "no row ranks at another node";
  RestartDataPath(nodes_[ranking].get(), [] {});
  exec::Session* s2 = SessionOn(ranking == 1 ? 2 : 1);
  Run(s2, fmt::format("UPDATE d.t SET n = 1000 WHERE id = {}", row));
  auto again = Exec(s1, fmt::format("SELECT n FROM d.t WHERE id = {} FOR UPDATE", row));
  ASSERT_EQ(again.size(), 1u);
  ASSERT_FALSE(again[0].ok()) << "the lock was taken afresh past another transaction's write";
  EXPECT_EQ(again[0].status().mysql_code(), 1047) << again[0].status().ToString();
  // Rolled back: a new transaction works.
  Run(s1, "BEGIN");
  EXPECT_EQ(Query(s1, fmt::format("SELECT n FROM d.t WHERE id = {} FOR UPDATE", row)),
            std::vector<std::string>{"1000"});
  Run(s1, "ROLLBACK");
}

// A participant restarted while prepared takes the prepared transaction's
// row locks again before it serves: another node's writer of those rows
// waits (1205) until the outcome is resolved, then goes through.
TEST_F(DataPathTest, PreparedLocksAreTakenAgainAfterParticipantRestart) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  exec::Session* s1 = SessionOn(0);
  TestNode* n2 = nodes_[1].get();
  std::string insert = InsertRows(1, 30);
  Run(s1, insert);
  // Node 1 updates every row; after prepare node 2 cannot hear the outcome.
  nodes_[0]->engine->txn()->TEST_SetAfterPrepare([&] { nodes_[0]->data->TEST_SetUnreachable("n2", true); });
  auto results = Exec(s1, "UPDATE d.t SET n = n + 100");
  nodes_[0]->engine->txn()->TEST_SetAfterPrepare(nullptr);
  nodes_[0]->data->TEST_SetUnreachable("n2", false);
  ASSERT_EQ(results.size(), 1u);
  ASSERT_EQ(n2->data->prepared_count(), 1u);
  const size_t held = n2->engine->txn()->locks()->locks_held();
  ASSERT_GT(held, 0u) << "node 2 ranks some of the rows";
  // Restart node 2's data path from its MetaStore (its locks go with it);
  // the prepared transaction's locks are back before anyone is served.
  RestartDataPath(n2, [&] { EXPECT_EQ(n2->engine->txn()->locks()->locks_held(), held); });
  exec::Session* s3 = SessionOn(2);
  Run(s3, "SET innodb_lock_wait_timeout = 1");
  Status blocked = Fail(s3, "UPDATE d.t SET n = 0");
  EXPECT_EQ(blocked.mysql_code(), 1205) << blocked.ToString();
  // Resolved from the decider: the locks go, the writer goes through.
  for (auto& n : nodes_) n->data->TEST_ResolveNow();
  EXPECT_EQ(n2->data->prepared_count(), 0u);
  const std::string sum = results[0].ok() ? "3465" : "465";  // 1..30, plus 100 each if committed
  for (int n = 0; n < 3; ++n) EXPECT_EQ(Query(SessionOn(n), "SELECT SUM(n) FROM d.t"), std::vector<std::string>{sum});
  Run(s3, "UPDATE d.t SET n = 0");
  EXPECT_EQ(Query(SessionOn(1), "SELECT SUM(n) FROM d.t"), std::vector<std::string>{"0"});
  ExpectReplicasIdentical();
  for (auto& n : nodes_) EXPECT_EQ(n->engine->txn()->locks()->locks_held(), 0u) << n->name;
}

// Makes `to` the ranking replica of every slice of d.t's primary key whose
// replicas are [from, to], in every node's catalog, as a failover or the
// rebalancer changes which replica ranks.
void MoveRanking(std::vector<std::unique_ptr<TestNode>>& nodes, const std::string& from, const std::string& to) {
  for (auto& n : nodes) {
    auto current = n->engine->catalog()->GetTable("d", "t");
    ASSERT_TRUE(current.ok());
    catalog::TableDef def = **current;
    for (auto& sd : def.primary.slices) {
      if (sd.replicas == std::vector<std::string>{from, to}) sd.replicas = {to, from};
    }
    ASSERT_TRUE(n->engine->catalog()->ReplaceTable(*current, def).ok()) << n->name;
  }
}

// docs/transactions.md "Row locks when the ranking replica changes": a
// replica that starts ranking while a transaction is prepared on it holds
// that transaction's row locks (taken at its prepare), so a writer there
// waits for the outcome instead of computing from the rows without it (a
// lost update).
TEST_F(DataPathTest, ReplicaThatStartsRankingHoldsThePreparedTransactionsLocks) {
  const auto [x, r, n, c] = PlaceRowOne();
  ASSERT_GE(r, 0);
  // C coordinates; row y ranks at N (its slice on N and C), so the
  // transaction writes on three nodes: two-phase commit.
  int y = -1;
  for (int id = 2; id <= 30 && y < 0; ++id) {
    if (RankingNode(SessionOn(0), id) == n) y = id;
  }
  ASSERT_GT(y, 0);
  exec::Session* t = SessionOn(c);
  exec::Session* writer = SessionOn(n);
  std::thread other;
  std::atomic<bool> other_done{false};
  bool done_while_prepared = true;
  Result<exec::StatementResult> other_result = Status::OK();
  nodes_[c]->engine->txn()->TEST_SetAfterPrepare([&] {
    // Prepared everywhere; now N ranks for x's slice.
    MoveRanking(nodes_, nodes_[r]->name, nodes_[n]->name);
    other = std::thread([&] {
      auto results = writer->Execute(fmt::format("UPDATE d.t SET n = n + 1000 WHERE id = {}", x));
      if (!results.empty()) other_result = std::move(results.back());
      other_done = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    done_while_prepared = other_done.load();
  });
  Run(t, "BEGIN");
  Run(t, fmt::format("UPDATE d.t SET n = n + 100 WHERE id IN ({}, {})", x, y));
  Run(t, "COMMIT");
  nodes_[c]->engine->txn()->TEST_SetAfterPrepare(nullptr);
  other.join();
  EXPECT_FALSE(done_while_prepared) << "the writer at the new ranking replica waited for the prepared transaction";
  ASSERT_TRUE(other_result.ok()) << other_result.status().ToString();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(Query(SessionOn(i), fmt::format("SELECT n FROM d.t WHERE id = {}", x)),
              std::vector<std::string>{std::to_string(x + 1100)})
        << "both updates, on " << nodes_[i]->name;
  }
  for (auto& node : nodes_) EXPECT_EQ(node->engine->txn()->locks()->locks_held(), 0u) << node->name;
}

// A transaction whose row lock was taken at a replica that no longer ranks
// is refused at commit with the retryable 1047: another writer may have
// locked the row at the new ranking replica meanwhile.
TEST_F(DataPathTest, CommitAfterTheRankingReplicaMovedIsRefusedAndRetryable) {
  const auto [x, r, n, c] = PlaceRowOne();
  ASSERT_GE(r, 0);
  exec::Session* t = SessionOn(c);
  Run(t, "BEGIN");
  EXPECT_EQ(Query(t, fmt::format("SELECT n FROM d.t WHERE id = {} FOR UPDATE", x)),
            std::vector<std::string>{std::to_string(x)});
  MoveRanking(nodes_, nodes_[r]->name, nodes_[n]->name);
  Run(t, fmt::format("UPDATE d.t SET n = 5 WHERE id = {}", x));
  Status refused = Fail(t, "COMMIT");
  EXPECT_EQ(refused.mysql_code(), 1047) << refused.ToString();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(Query(SessionOn(i), fmt::format("SELECT n FROM d.t WHERE id = {}", x)),
              std::vector<std::string>{std::to_string(x)})
        << nodes_[i]->name;
  }
  // Run again, it locks at the new ranking replica and commits.
  Run(t, "BEGIN");
  Run(t, fmt::format("UPDATE d.t SET n = 5 WHERE id = {}", x));
  Run(t, "COMMIT");
  EXPECT_EQ(Query(SessionOn(n), fmt::format("SELECT n FROM d.t WHERE id = {}", x)), std::vector<std::string>{"5"});
  ExpectReplicasIdentical();
  for (auto& node : nodes_) EXPECT_EQ(node->engine->txn()->locks()->locks_held(), 0u) << node->name;
}

// A replica that becomes ranking after its ranking node is lost does not
// hold the row locks of the transactions prepared on it (they were taken at
// the lost node). A locking read there must still not read around such a
// transaction: it waits for its outcome, else a writer computes from the
// rows without it and the transaction, committed under it at an older
// timestamp, is lost (cluster_bank's wrong totals after a node was killed).
// Node 1 updates every row (two-phase); node 2 hears no outcome. Then the
// slices node 1 ranked with node 2 as their other replica lose node 1 (as
// when it is removed): node 2 ranks them, holding the update prepared and
// none of its locks on their rows. A writer of those rows through `via`
// waits for the outcome and adds to it.
void DataPathTest::ReadAroundPreparedAtNewRankingReplica(int via) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  exec::Session* s1 = SessionOn(0);
  TestNode* n2 = nodes_[1].get();
  Run(s1, InsertRows(1, 30));
  nodes_[0]->engine->txn()->TEST_SetAfterDecide(
      [&](const txn::DeciderPair&) { nodes_[0]->data->TEST_SetUnreachable("n2", true); });
  auto results = Exec(s1, "UPDATE d.t SET n = n + 100");
  nodes_[0]->engine->txn()->TEST_SetAfterDecide(nullptr);
  nodes_[0]->data->TEST_SetUnreachable("n2", false);
  ASSERT_EQ(results.size(), 1u);
  ASSERT_TRUE(results[0].ok()) << results[0].status().ToString();  // decided: committed
  ASSERT_EQ(n2->data->prepared_count(), 1u);
  // Node 1 leaves the slices it ranked with node 2.
  std::set<storage::SliceId> moved;
  for (auto& n : nodes_) {
    auto current = n->engine->catalog()->GetTable("d", "t");
    ASSERT_TRUE(current.ok());
    catalog::TableDef def = **current;
    for (auto& sd : def.primary.slices) {
      if (sd.replicas == std::vector<std::string>{"n1", "n2"}) {
        sd.replicas = {"n2"};
        moved.insert(sd.id);
      }
    }
    ASSERT_TRUE(n->engine->catalog()->ReplaceTable(*current, def).ok());
    def_ = def;
  }
  ASSERT_FALSE(moved.empty());
  std::string ids;
  int expected = 0;
  for (int id = 1; id <= 30; ++id) {
    const catalog::SliceDef& sd = def_.primary.SliceForHash(catalog::DistributionHash(def_.primary, {Value::Int(id)}));
    if (!moved.count(sd.id)) continue;
    ids += (ids.empty() ? "" : ",") + std::to_string(id);
    expected += id + 100 + 1;
  }
  ASSERT_FALSE(ids.empty());
  // Node 2 learns the outcome a moment after the writer has locked its rows.
  std::thread resolver([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    n2->data->TEST_ResolveNow();
  });
  exec::Session* writer = SessionOn(via);
  auto updated = Exec(writer, fmt::format("UPDATE d.t SET n = n + 1 WHERE id IN ({})", ids));
  resolver.join();
  ASSERT_EQ(updated.size(), 1u);
  EXPECT_TRUE(updated[0].ok()) << updated[0].status().ToString();
  EXPECT_EQ(n2->data->prepared_count(), 0u);
  for (int n = 0; n < 3; ++n) {
    EXPECT_EQ(Query(SessionOn(n), fmt::format("SELECT SUM(n) FROM d.t WHERE id IN ({})", ids)),
              std::vector<std::string>{std::to_string(expected)})
        << "through " << nodes_[n]->name;
  }
  for (auto& n : nodes_) EXPECT_EQ(n->engine->txn()->locks()->locks_held(), 0u) << n->name;
}

TEST_F(DataPathTest, LockingReadAtANewRankingReplicaWaitsForItsPreparedWriters) {
  ReadAroundPreparedAtNewRankingReplica(/*via=*/2);  // remote reads at node 2
}

TEST_F(DataPathTest, LocalLockingReadAtANewRankingReplicaWaitsForItsPreparedWriters) {
  ReadAroundPreparedAtNewRankingReplica(/*via=*/1);  // node 2 reads its own replica
}

// An autocommit statement that meets a node not answering is run again
// inside the cluster (docs/cluster.md "Failures while statements run"): the
// client sees nothing when the node is back within the retry budget.
TEST_F(DataPathTest, AutocommitStatementsAreRetriedInsideTheCluster) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  exec::Session* s1 = SessionOn(0);
  Run(s1, "INSERT INTO d.t VALUES (1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6), (7, 7), (8, 8)");
  const uint64_t retries = exec::Session::StatementRetries();
  nodes_[0]->data->TEST_SetUnreachable("n2", true);
  std::thread heal([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    nodes_[0]->data->TEST_SetUnreachable("n2", false);
  });
  Run(s1, "UPDATE d.t SET n = n * 10");
  heal.join();
  EXPECT_GT(exec::Session::StatementRetries(), retries);
  EXPECT_EQ(Query(SessionOn(2), "SELECT SUM(n) FROM d.t"), std::vector<std::string>{"360"});
  ExpectReplicasIdentical();
}

// A statement of a multi-statement transaction that meets a node not
// answering fails with the retryable 1047 and rolls the whole transaction
// back, its locks released on every node.
// A statement whose plan came from the plan cache runs its retry with its
// own literals: the cache entry's statement tree holds those of the
// statement that made the entry. (Issue 16's Jepsen register runs: a point
// SELECT retried after a node was killed answered with another key's row.)
TEST_F(DataPathTest, RetriedCachedStatementKeepsItsOwnLiterals) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  exec::Session* s1 = SessionOn(0);
  Run(s1, "INSERT INTO d.t VALUES (1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6), (7, 7), (8, 8)");
  // Makes the cache entry of this shape (and checks the answer).
  EXPECT_EQ(Query(s1, "SELECT SUM(n) FROM d.t WHERE id >= 1"), std::vector<std::string>{"36"});
  EXPECT_EQ(Query(s1, "SELECT SUM(n) FROM d.t WHERE id >= 3"), std::vector<std::string>{"33"});
  const uint64_t retries = exec::Session::StatementRetries();
  nodes_[0]->data->TEST_SetUnreachable("n2", true);
  std::thread heal([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    nodes_[0]->data->TEST_SetUnreachable("n2", false);
  });
  std::vector<std::string> sum = Query(s1, "SELECT SUM(n) FROM d.t WHERE id >= 2");
  heal.join();
  EXPECT_GT(exec::Session::StatementRetries(), retries) << "the statement was not retried";
  EXPECT_EQ(sum, std::vector<std::string>{"35"});
}

TEST_F(DataPathTest, RetryableErrorRollsBackAMultiStatementTransaction) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  exec::Session* s1 = SessionOn(0);
  Run(s1, "INSERT INTO d.t VALUES (1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6), (7, 7), (8, 8)");
  Run(s1, "BEGIN");
  Run(s1, "UPDATE d.t SET n = 100 WHERE id = 1");
  nodes_[0]->data->TEST_SetUnreachable("n2", true);
  Status st = Fail(s1, "UPDATE d.t SET n = n + 1");
  nodes_[0]->data->TEST_SetUnreachable("n2", false);
  EXPECT_EQ(st.mysql_code(), 1047) << st.ToString();
  EXPECT_STREQ(st.sqlstate(), "08S01");
  EXPECT_NE(st.message().find("retry"), std::string::npos) << st.message();
  // The transaction is gone: COMMIT commits nothing, nothing is locked.
  Run(s1, "COMMIT");
  EXPECT_EQ(Query(SessionOn(1), "SELECT SUM(n) FROM d.t"), std::vector<std::string>{"36"});
  for (auto& n : nodes_) n->data->TEST_ResolveNow();
  for (int i = 0; i < 3; ++i) {
    // Node 2's locks of the transaction go when the coordinator's unlock
    // reaches it (it was cut off then) or with the lease; the others at once.
    if (i == 1) continue;
    EXPECT_EQ(nodes_[i]->engine->txn()->locks()->locks_held(), 0u) << nodes_[i]->name;
  }
}

// The decider drops its record once every participant has finished.
TEST_F(DataPathTest, DecisionRecordsAreDroppedOnceEveryParticipantFinished) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  exec::Session* s1 = SessionOn(0);
  for (int round = 0; round < 5; ++round) {
    std::string insert = InsertRows(1, 12, round * 100);
    Run(s1, insert);
  }
  EXPECT_EQ(Query(SessionOn(2), "SELECT COUNT(*) FROM d.t"), std::vector<std::string>{"60"});
  // The coordinator drops them in the background, after answering.
  ASSERT_TRUE(nodes_[0]->data->TEST_DrainForgets(std::chrono::seconds(10)));
  for (int n = 0; n < 3; ++n) EXPECT_EQ(DecisionRecords(n), 0u) << nodes_[n]->name;
}

// The client is answered before the decision records are dropped. A
// coordinator killed in between (its Forget queue lost) leaves records
// behind but nothing in doubt: every participant has applied the commit
// and released its locks, so no one asks those records again.
TEST_F(DataPathTest, CoordinatorLostAfterAcknowledgingLeavesNothingInDoubt) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  exec::Session* s1 = SessionOn(0);
  nodes_[0]->data->TEST_PauseForgets(true);
  std::string insert = InsertRows(1, 30);
  Run(s1, insert);  // acknowledged
  EXPECT_EQ(nodes_[0]->data->pending_forgets(), 3u) << "a Forget for each of the three acceptors";
  EXPECT_EQ(AwaitDecisionRecords(), 2u) << "the two acceptors asked (a majority)";
  nodes_[0]->data->TEST_DropForgets();  // killed before Forget
  nodes_[0]->data->TEST_PauseForgets(false);
  for (auto& n : nodes_) {
    EXPECT_EQ(n->data->prepared_count(), 0u) << n->name;
    EXPECT_EQ(n->engine->txn()->locks()->locks_held(), 0u) << n->name;
    n->data->TEST_ResolveNow();  // nothing to resolve
  }
  for (int n = 0; n < 3; ++n) {
    EXPECT_EQ(Query(SessionOn(n), "SELECT COUNT(*), SUM(n) FROM d.t"), std::vector<std::string>{"30|465"})
        << nodes_[n]->name;
  }
  ExpectReplicasIdentical();
  // The rows take writes again at once, from another coordinator too.
  Run(SessionOn(1), "UPDATE d.t SET n = n + 1");
  EXPECT_EQ(Query(SessionOn(2), "SELECT SUM(n) FROM d.t"), std::vector<std::string>{"495"});
  ExpectReplicasIdentical();
}

// A Forget that cannot reach the decider or the backup is tried again
// later; once they answer, the records are gone.
TEST_F(DataPathTest, ForgetIsRetriedUntilTheDecisionKeepersAnswer) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  exec::Session* s1 = SessionOn(0);
  nodes_[0]->data->TEST_PauseForgets(true);
  std::string insert = InsertRows(1, 30);
  Run(s1, insert);
  nodes_[0]->data->TEST_SetUnreachable("n2", true);
  nodes_[0]->data->TEST_SetUnreachable("n3", true);
  nodes_[0]->data->TEST_PauseForgets(false);
  // The first attempt fails; the next one is due 1 s later.
  EXPECT_FALSE(nodes_[0]->data->TEST_DrainForgets(std::chrono::milliseconds(500)));
  EXPECT_GT(nodes_[0]->data->pending_forgets(), 0u);
  nodes_[0]->data->TEST_SetUnreachable("n2", false);
  nodes_[0]->data->TEST_SetUnreachable("n3", false);
  ASSERT_TRUE(nodes_[0]->data->TEST_DrainForgets(std::chrono::seconds(10)));
  for (int n = 0; n < 3; ++n) EXPECT_EQ(DecisionRecords(n), 0u) << nodes_[n]->name;
}

// A participant deletes its prepared record without an fsync once it has
// applied the commit (one synced write per participant in Finish). A power
// loss before the next MetaStore sync brings the record back: the restarted
// participant resolves it again, and neither outcome it can get changes
// the data — commit (the decision record is still there) applies the same
// versions at the same timestamp, abort (the record was forgotten, the
// resolver records abort) discards nothing that was applied.
TEST_F(DataPathTest, FinishedRecordBackAfterPowerLossAppliesNothingTwice) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  exec::Session* s1 = SessionOn(0);
  TestNode* participant = nodes_[1].get();
  for (bool forgotten : {true, false}) {
    SCOPED_TRACE(forgotten ? "decision record forgotten" : "decision record still there");
    std::vector<std::pair<std::string, std::string>> records;
    nodes_[0]->engine->txn()->TEST_SetAfterDecide(
        [&](const txn::DeciderPair&) { records = PreparedRecords(participant); });
    nodes_[0]->data->TEST_PauseForgets(!forgotten);
    const int base = forgotten ? 0 : 100;
    std::string insert = InsertRows(1, 30, base);
    Run(s1, insert);
    nodes_[0]->engine->txn()->TEST_SetAfterDecide(nullptr);
    if (forgotten) {
      ASSERT_TRUE(nodes_[0]->data->TEST_DrainForgets(std::chrono::seconds(10)));
    }
    ASSERT_EQ(records.size(), 1u);
    EXPECT_EQ(participant->data->prepared_count(), 0u);
    // The power loss: the unsynced delete is lost, the record is back.
    ASSERT_TRUE(participant->data->TEST_SyncFinished().ok());  // deleted first
    ASSERT_TRUE(participant->engine->meta()->Put(records[0].first, records[0].second).ok());
    RestartDataPath(participant, [] {});
    EXPECT_EQ(participant->data->prepared_count(), 1u);
    participant->data->TEST_ResolveNow();
    EXPECT_EQ(participant->data->prepared_count(), 0u);
    EXPECT_EQ(participant->engine->txn()->locks()->locks_held(), 0u);
    nodes_[0]->data->TEST_PauseForgets(false);
    const std::string want = forgotten ? "30|465" : "60|930";
    for (int n = 0; n < 3; ++n) {
      EXPECT_EQ(Query(SessionOn(n), "SELECT COUNT(*), SUM(n) FROM d.t"), std::vector<std::string>{want})
          << nodes_[n]->name;
    }
    // Byte-identical replicas: no version was written twice differently.
    ExpectReplicasIdentical();
  }
}

// A commit's Finish applies its share without waiting for the WAL sync
// (docs/transactions.md, step 4): its prepared record stays until the apply
// is durable, and the coordinator drops the acceptors' records only after
// every participant said its applies are. A crash before that sync loses
// the apply; the record comes back, and the restarted node resolves it from
// the acceptors and applies it again. Two such records of one row (the
// second transaction locked the row after the first's Finish) load
// together: the newer takes the row lock.
TEST_F(DataPathTest, CommitsAppliedWithoutTheirSyncAreResolvedAgainAfterACrash) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  exec::Session* s1 = SessionOn(0);
  Run(s1, InsertRows(1, 30));
  ASSERT_TRUE(nodes_[0]->data->TEST_DrainForgets(std::chrono::seconds(10)));
  ASSERT_EQ(AwaitDecisionRecords(), 0u);
  TestNode* p = nodes_[1].get();
  p->data->TEST_HoldSyncs(true);
  Run(s1, "UPDATE d.t SET n = n + 1");
  Run(s1, "UPDATE d.t SET n = n + 1");
  // Acknowledged; past the Forget's linger, nothing is dropped.
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  for (auto& n : nodes_) n->data->TEST_DrainPaxosCalls();
  std::vector<txn::commit::PreparedRecordPb> records;
  ASSERT_TRUE(p->engine->meta()
                  ->Scan("txn/prepared/",
                         [&](std::string_view, std::string_view v) {
                           records.emplace_back();
                           EXPECT_TRUE(records.back().ParseFromArray(v.data(), static_cast<int>(v.size())));
                           return true;
                         })
                  .ok());
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(p->data->prepared_count(), 0u) << "applied, only not synced";
  // Two acceptors' records per transaction (three when a slow answer made
  // the coordinator ask the third too), kept.
  EXPECT_GE(TotalDecisionRecords(), 4u);
  EXPECT_LE(TotalDecisionRecords(), 6u);
  std::set<std::string> common;
  for (const std::string& lock : records[0].locks()) {
    if (std::count(records[1].locks().begin(), records[1].locks().end(), lock) > 0) common.insert(lock);
  }
  EXPECT_FALSE(common.empty()) << "both records name the rows ranked here";
  // The crash loses both applies (their WAL records were never synced):
  // their versions go from p's replicas.
  const std::set<uint64_t> lost{records[0].commit_ts(), records[1].commit_ts()};
  size_t removed = 0;
  for (const auto& sd : def_.primary.slices) {
    if (std::find(sd.replicas.begin(), sd.replicas.end(), p->name) == sd.replicas.end()) continue;
    storage::WriteBatch batch;
    for (const auto& [raw, value] : RawSlice(NodeIndex(p->name), sd.id)) {
      std::string user_key;
      uint64_t ts = 0;
      if (storage::DecodeVersionKey(raw, &user_key, &ts) && lost.count(ts)) batch.Delete(raw);
    }
    removed += batch.size();
    ASSERT_TRUE(p->engine->slices()->Write({{sd.id, &batch}}).ok());
  }
  EXPECT_GT(removed, 0u);
  RestartDataPath(p, [] {});  // its Stop's sync is refused too: the records stay
  EXPECT_EQ(p->data->prepared_count(), 2u);
  p->data->TEST_ResolveNow();
  EXPECT_EQ(p->data->prepared_count(), 0u);
  EXPECT_EQ(p->engine->txn()->locks()->locks_held(), 0u);
  for (int n = 0; n < 3; ++n) {
    EXPECT_EQ(Query(SessionOn(n), "SELECT COUNT(*), SUM(n) FROM d.t"), std::vector<std::string>{"30|525"})
        << nodes_[n]->name;
  }
  ExpectReplicasIdentical();
  // The coordinator's Forget, tried again, goes through now.
  ASSERT_TRUE(nodes_[0]->data->TEST_DrainForgets(std::chrono::seconds(15)));
  EXPECT_EQ(AwaitDecisionRecords(), 0u);
}

// Decision records a coordinator left behind (Forget given up, or the
// coordinator died before it) are dropped by the sweep at the nodes keeping
// them (issue 6): at once when every participant answers that it holds
// nothing; while the coordinator (a participant here) is a member that does
// not answer they stay, and once it has been removed from the membership
// they go.
TEST_F(DataPathTest, SweepCollectsRecordsACoordinatorLeftBehind) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  exec::Session* s1 = SessionOn(0);
  auto commit_without_forget = [&](int base) {
    nodes_[0]->data->TEST_PauseForgets(true);
    std::string insert = InsertRows(1, 30, base);
    Run(s1, insert);  // acknowledged
    nodes_[0]->data->TEST_DropForgets();  // the coordinator gave up, or died
    nodes_[0]->data->TEST_PauseForgets(false);
  };
  commit_without_forget(0);
  ASSERT_EQ(AwaitDecisionRecords(), 2u) << "the records of the two acceptors asked (a majority)";
  EXPECT_EQ(CountedDecisionRecords(), 2u);
  EXPECT_EQ(SweepEveryNode(), 2u);
  EXPECT_EQ(TotalDecisionRecords(), 0u);
  EXPECT_EQ(CountedDecisionRecords(), 0u);
  for (int n = 0; n < 3; ++n) {
    EXPECT_EQ(Query(SessionOn(n), "SELECT COUNT(*), SUM(n) FROM d.t"), std::vector<std::string>{"30|465"})
        << nodes_[n]->name;
  }
  ExpectReplicasIdentical();

  // The coordinator dies: the others cannot reach it, but it is a member
  // (it may come back holding the transaction prepared).
  commit_without_forget(100);
  ASSERT_EQ(AwaitDecisionRecords(), 2u);
  for (int n = 1; n < 3; ++n) nodes_[n]->data->TEST_SetUnreachable("n1", true);
  // The survivors sweep (n1, dead, does not).
  auto sweep_survivors = [&] {
    return nodes_[1]->data->TEST_SweepDecisions() + nodes_[2]->data->TEST_SweepDecisions();
  };
  EXPECT_EQ(sweep_survivors(), 0u);
  EXPECT_EQ(TotalDecisionRecords(), 2u);
  EXPECT_EQ(CountedDecisionRecords(), 2u);
  // It is removed from the membership (its replicas leave the slice map).
  EraseAddress("n1");
  EXPECT_EQ(sweep_survivors(), 1u);  // the other acceptor asked
  EXPECT_EQ(DecisionRecords(1) + DecisionRecords(2), 0u);
  EXPECT_EQ(DecisionRecords(0), 1u) << "the dead node's own record";
}

// A participant that missed Finish still holds the transaction prepared:
// the sweep keeps the records it will ask, it resolves to commit from them,
// and the next sweep drops them.
TEST_F(DataPathTest, SweepKeepsTheRecordsAPreparedParticipantNeeds) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  exec::Session* s1 = SessionOn(0);
  txn::DeciderPair deciders;
  nodes_[0]->engine->txn()->TEST_SetAfterDecide([&](const txn::DeciderPair& d) {
    deciders = d;
    // The decision is chosen by a majority; an accept may still be on its
    // way (a detached call): let it land, so every acceptor asked holds the
    // record, before n3 stops answering.
    nodes_[0]->data->TEST_DrainPaxosCalls();
    nodes_[0]->data->TEST_SetUnreachable("n3", true);  // n3 misses Finish
  });
  std::string insert = InsertRows(1, 30);
  Run(s1, insert);  // decided: acknowledged
  nodes_[0]->engine->txn()->TEST_SetAfterDecide(nullptr);
  nodes_[0]->data->TEST_SetUnreachable("n3", false);
  EXPECT_EQ(deciders.participants, (std::vector<std::string>{"n1", "n2", "n3"}));
  ASSERT_EQ(nodes_[2]->data->prepared_count(), 1u);
  EXPECT_TRUE(nodes_[0]->data->TEST_DrainForgets(std::chrono::seconds(10)));
  ASSERT_EQ(AwaitDecisionRecords(), 2u) << "no Forget: a participant did not finish";
  EXPECT_EQ(SweepEveryNode(), 0u);
  EXPECT_EQ(TotalDecisionRecords(), 2u);
  EXPECT_EQ(CountedDecisionRecords(), 2u);
  // n3 asks for the outcome: commit.
  nodes_[2]->data->TEST_ResolveNow();
  EXPECT_EQ(nodes_[2]->data->prepared_count(), 0u);
  for (int n = 0; n < 3; ++n) {
    EXPECT_EQ(Query(SessionOn(n), "SELECT COUNT(*), SUM(n) FROM d.t"), std::vector<std::string>{"30|465"})
        << nodes_[n]->name;
  }
  ExpectReplicasIdentical();
  for (auto& n : nodes_) EXPECT_EQ(n->engine->txn()->locks()->locks_held(), 0u) << n->name;
  EXPECT_EQ(SweepEveryNode(), 3u);  // its resolver asked every acceptor
  EXPECT_EQ(TotalDecisionRecords(), 0u);
  EXPECT_EQ(CountedDecisionRecords(), 0u);
}

// An abort record left by the participants' resolvers stays while the
// coordinator's commit is in progress, even when no participant holds the
// transaction any more: the coordinator may still ask for commit, and a
// commit recorded then would be applied nowhere. Here the coordinator is
// not a participant (both replicas of the row are on the other nodes).
// The write is a delete: a write set on two nodes with no put has no probe
// for one phase (docs/transactions.md "One phase on two nodes"), so it
// takes two phases, as this test needs.
TEST_F(DataPathTest, SweepKeepsAnAbortRecordWhileItsCoordinatorCommits) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  exec::Session* s1 = SessionOn(0);
  std::string insert = InsertRows(1, 30);
  Run(s1, insert);
  ASSERT_TRUE(nodes_[0]->data->TEST_DrainForgets(std::chrono::seconds(10)));
  ASSERT_EQ(TotalDecisionRecords(), 0u);
  // A row whose ranking replica is on n2: its slice's replicas are n2 and
  // n3 (CreatePlacedTable's rotation).
  int id = -1;
  for (int i = 1; i <= 30 && id < 0; ++i) {
    if (RankingNode(s1, i) == 1) id = i;
  }
  ASSERT_GT(id, 0);
  txn::DeciderPair deciders;
  size_t kept = 0;
  bool prepared = false;
  nodes_[0]->engine->txn()->TEST_SetAfterPrepare([&] {
    prepared = true;
    // The participants give up on the slow coordinator: abort is recorded
    // and both discard their share.
    nodes_[1]->data->TEST_ResolveNow();
    nodes_[2]->data->TEST_ResolveNow();
    for (auto& n : nodes_) EXPECT_EQ(n->data->prepared_count(), 0u) << n->name;
    AwaitDecisionRecords();
    SweepEveryNode();
    kept = TotalDecisionRecords();
  });
  nodes_[0]->engine->txn()->TEST_SetAfterDecide([&](const txn::DeciderPair& d) { deciders = d; });
  Status st = Fail(s1, fmt::format("DELETE FROM d.t WHERE id = {}", id));
  nodes_[0]->engine->txn()->TEST_SetAfterPrepare(nullptr);
  nodes_[0]->engine->txn()->TEST_SetAfterDecide(nullptr);
  EXPECT_TRUE(prepared) << "the delete took two phases";
  EXPECT_EQ(st.mysql_code(), 1213) << st.ToString();
  EXPECT_TRUE(deciders.acceptors.empty()) << "no commit was chosen";
  EXPECT_EQ(kept, 3u) << "the abort records stay while the coordinator commits";
  EXPECT_EQ(AcceptedValues(), std::set<std::string>{"abort"});
  for (int n = 0; n < 3; ++n) {
    EXPECT_EQ(Query(SessionOn(n), fmt::format("SELECT n FROM d.t WHERE id = {}", id)),
              std::vector<std::string>{std::to_string(id)})
        << nodes_[n]->name;
  }
  ExpectReplicasIdentical();
  // The coordinator is done: no one needs them.
  EXPECT_EQ(SweepEveryNode(), 3u);
  EXPECT_EQ(TotalDecisionRecords(), 0u);
  EXPECT_EQ(CountedDecisionRecords(), 0u);
}

// A participant's prepared record comes back after the commit (its unsynced
// delete lost in a power loss, as in
// FinishedRecordBackAfterPowerLossAppliesNothingTwice). Back before a
// sweep: the sweep keeps the decision records and the participant resolves
// to commit from them. Back after the sweep dropped them: the participant
// resolves to abort, which discards nothing that was applied, and the
// abort record its resolver left is swept too.
TEST_F(DataPathTest, RecordBackAfterPowerLossResolvesAroundTheSweep) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  exec::Session* s1 = SessionOn(0);
  TestNode* participant = nodes_[1].get();
  for (bool swept_first : {false, true}) {
    SCOPED_TRACE(swept_first ? "record back after the sweep" : "record back before the sweep");
    std::vector<std::pair<std::string, std::string>> records;
    nodes_[0]->engine->txn()->TEST_SetAfterDecide(
        [&](const txn::DeciderPair&) { records = PreparedRecords(participant); });
    nodes_[0]->data->TEST_PauseForgets(true);
    const int base = swept_first ? 100 : 0;
    std::string insert = InsertRows(1, 30, base);
    Run(s1, insert);
    nodes_[0]->engine->txn()->TEST_SetAfterDecide(nullptr);
    nodes_[0]->data->TEST_DropForgets();  // left to the sweep
    nodes_[0]->data->TEST_PauseForgets(false);
    ASSERT_EQ(records.size(), 1u);
    ASSERT_EQ(AwaitDecisionRecords(), 2u);
    if (swept_first) {
      EXPECT_EQ(SweepEveryNode(), 2u);
      EXPECT_EQ(TotalDecisionRecords(), 0u);
    }
    // The power loss: the record is back.
    ASSERT_TRUE(participant->engine->meta()->Put(records[0].first, records[0].second).ok());
    RestartDataPath(participant, [] {});
    ASSERT_EQ(participant->data->prepared_count(), 1u);
    if (!swept_first) {
      EXPECT_EQ(SweepEveryNode(), 0u) << "the participant holds it prepared";
      EXPECT_EQ(TotalDecisionRecords(), 2u);
    }
    participant->data->TEST_ResolveNow();
    EXPECT_EQ(participant->data->prepared_count(), 0u);
    EXPECT_EQ(participant->engine->txn()->locks()->locks_held(), 0u);
    const std::string want = swept_first ? "60|930" : "30|465";
    for (int n = 0; n < 3; ++n) {
      EXPECT_EQ(Query(SessionOn(n), "SELECT COUNT(*), SUM(n) FROM d.t"), std::vector<std::string>{want})
          << nodes_[n]->name;
    }
    ExpectReplicasIdentical();
    AwaitDecisionRecords();
    if (swept_first) {
      EXPECT_GT(TotalDecisionRecords(), 0u) << "the resolver recorded abort";
    }
    EXPECT_GT(SweepEveryNode(), 0u);
    EXPECT_EQ(TotalDecisionRecords(), 0u);
    EXPECT_EQ(CountedDecisionRecords(), 0u);
  }
}

TEST_F(DataPathTest, SingleReplicaSlicesOnOtherNodes) {
  // One replica per slice: a write to one remote slice commits in one phase
  // there, a write to slices on several nodes in two.
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6", 1);
  exec::Session* s1 = SessionOn(0);
  for (int i = 1; i <= 12; ++i) Run(s1, fmt::format("INSERT INTO d.t VALUES ({}, {})", i, i));
  Run(s1, "UPDATE d.t SET n = n * 2");
  for (int n = 0; n < 3; ++n) {
    exec::Session* s = SessionOn(n);
    EXPECT_EQ(Query(s, "SELECT COUNT(*), SUM(n) FROM d.t"), std::vector<std::string>{"12|156"}) << nodes_[n]->name;
  }
  for (auto& n : nodes_) EXPECT_EQ(n->data->prepared_count(), 0u);
  for (auto& n : nodes_) EXPECT_EQ(n->engine->txn()->locks()->locks_held(), 0u) << n->name;
}

class DataPathShortLeaseTest : public DataPathTest {
 protected:
  uint32_t LockLeaseMs() const override { return 300; }
};

TEST_F(DataPathShortLeaseTest, LocksOfASilentCoordinatorEndWithTheirLease) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  exec::Session* s1 = SessionOn(0);
  Run(s1, "INSERT INTO d.t VALUES (1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6)");
  // Node 1's transaction locks every row (some at other nodes), then goes
  // silent past the lease.
  Run(s1, "BEGIN");
  Run(s1, "SELECT * FROM d.t FOR UPDATE");
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  // The rows ranked at nodes 2 and 3 are free again.
  exec::Session* s2 = SessionOn(1);
  Run(s2, "SET innodb_lock_wait_timeout = 1");
  size_t updated = 0;
  for (int id = 1; id <= 6; ++id) {
    auto r = Exec(s2, fmt::format("UPDATE d.t SET n = 100 WHERE id = {}", id));
    if (r.back().ok()) ++updated;
  }
  EXPECT_GT(updated, 0u);
  EXPECT_LT(updated, 6u);  // node 1's own locks stay with its live session
  // The transaction that lost its locks cannot commit writes there.
  auto r = Exec(s1, "UPDATE d.t SET n = 0");
  if (r.back().ok()) {
    Status st = Fail(s1, "COMMIT");
    EXPECT_EQ(st.mysql_code(), 1205) << st.ToString();
  } else {
    EXPECT_EQ(r.back().status().mysql_code(), 1205) << r.back().status().ToString();
    Run(s1, "ROLLBACK");
  }
  EXPECT_EQ(Query(s2, "SELECT COUNT(*) FROM d.t WHERE n = 0"), std::vector<std::string>{"0"});
}

// ---- One phase on two nodes (docs/transactions.md "One phase on two nodes")

class OnePhaseTest : public DataPathTest {
 protected:
  // The nodes of row `id`'s slice of d.t (CreatePlacedTable: the ranking
  // replica, the next node in rotation, and the node without a replica).
  // A single-row write's applier is the ranking node, where it locks.
  struct Roles {
    int applier, other, third;
  };
  Roles RolesOf(int id) {
    // Found by taking the row's lock (as RankingNode), tried again while
    // the nodes' first channels to each other are still connecting.
    exec::Session* s = SessionOn(0);
    int a = -1;
    for (int attempt = 0; attempt < 20 && a < 0; ++attempt) {
      Run(s, "BEGIN");
      auto r = Exec(s, fmt::format("SELECT n FROM d.t WHERE id = {} FOR UPDATE", id));
      if (!r.empty() && r.back().ok()) {
        for (size_t i = 0; i < nodes_.size(); ++i) {
          if (nodes_[i]->engine->txn()->locks()->locks_held() > 0) a = static_cast<int>(i);
        }
      }
      Run(s, "ROLLBACK");
      if (a < 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    if (a < 0) {
      ADD_FAILURE() << "no ranking node found for row " << id;
      a = 0;
    }
    return Roles{a, (a + 1) % 3, (a + 2) % 3};
  }
  // The one prepared record at node n (its transaction, timestamp, writes).
  PrepareRequest PreparedRecord(int n) {
    EXPECT_TRUE(nodes_[n]->data->TEST_SyncFinished().ok());  // finished ones go
    PrepareRequest record;
    size_t count = 0;
    EXPECT_TRUE(nodes_[n]
                    ->engine->meta()
                    ->Scan("txn/prepared/",
                           [&](std::string_view, std::string_view v) {
                             ++count;
                             EXPECT_TRUE(record.ParseFromArray(v.data(), static_cast<int>(v.size())));
                             return true;
                           })
                    .ok());
    EXPECT_EQ(count, 1u) << nodes_[n]->name;
    return record;
  }
  static txn::WriteSet WritesOf(const PrepareRequest& record) {
    txn::WriteSet out;
    for (const SliceWritesPb& w : record.writes()) {
      for (int i = 0; i < w.keys_size(); ++i) {
        out[w.slice()][w.keys(i)] =
            w.deletes(i) ? std::nullopt : std::optional<std::string>(w.values(i));
      }
    }
    return out;
  }
  uint64_t OnePhaseCommits(int n) { return nodes_[n]->engine->txn()->stats().one_phase_commits; }
  uint64_t TwoPhaseCommits(int n) { return nodes_[n]->engine->txn()->stats().two_phase_commits; }
  size_t PresumedRecords(int n) {
    size_t records = 0;
    EXPECT_TRUE(nodes_[n]
                    ->engine->meta()
                    ->Scan("txn/presumed/", [&](std::string_view, std::string_view) {
                      ++records;
                      return true;
                    })
                    .ok());
    return records;
  }
  void RemoveNode(int n) {
    nodes_[n]->rpc->Shutdown();
    EraseAddress(nodes_[n]->name);
  }
  void CutOff(int from, int to, bool cut) { nodes_[from]->data->TEST_SetUnreachable(nodes_[to]->name, cut); }
  // The prepared record of one row's insert from node `coordinator`, as
  // captured by the hook after the other node prepared.
  void Capture(int coordinator, int other) {
    nodes_[coordinator]->engine->txn()->TEST_SetAfterOnePhasePrepare([this, other](const txn::DeciderPair& d) {
      deciders_ = d;
      record_ = PreparedRecord(other);
    });
  }
  // The transaction of the captured record_.
  txn::TxnKey RecordKey() const { return txn::TxnKey{record_.txn().coordinator(), record_.txn().id()}; }
  // Its apply sent late, from the third node to the applier (as a
  // coordinator whose request outlived its answer).
  Status LateApply(const Roles& r, bool* refused) {
    return nodes_[r.third]->data->ApplyDecision(nodes_[r.applier]->name, RecordKey(), record_.commit_ts(),
                                                WritesOf(record_), {}, refused);
  }
  // Inserts row (1, 1) through the third node, which is cut off from both
  // other nodes right after the other node prepared (deciders_ and record_
  // captured then); the statement's error.
  Status InsertCutOffAfterPrepare(const Roles& r) {
    nodes_[r.third]->engine->txn()->TEST_SetAfterOnePhasePrepare([this, r](const txn::DeciderPair& d) {
      deciders_ = d;
      record_ = PreparedRecord(r.other);
      CutOff(r.third, r.applier, true);
      CutOff(r.third, r.other, true);
    });
    Status st = Fail(SessionOn(r.third), "INSERT INTO d.t VALUES (1, 1)");
    nodes_[r.third]->engine->txn()->TEST_SetAfterOnePhasePrepare(nullptr);
    return st;
  }
  txn::DeciderPair deciders_;
  PrepareRequest record_;
};

TEST_F(OnePhaseTest, SingleSliceWritesOnTwoNodesCommitInOnePhase) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  for (int c = 0; c < 3; ++c) {
    exec::Session* s = SessionOn(c);
    const uint64_t one = OnePhaseCommits(c), two = TwoPhaseCommits(c);
    for (int i = 1; i <= 10; ++i) Run(s, fmt::format("INSERT INTO d.t VALUES ({}, {})", c * 100 + i, i));
    Run(s, fmt::format("UPDATE d.t SET n = n + 1 WHERE id = {}", c * 100 + 1));
    Run(s, fmt::format("DELETE FROM d.t WHERE id = {}", c * 100 + 2));
    // Every single-row insert or update (its slice on two nodes): one
    // phase. A delete has no put to probe: two phases.
    EXPECT_EQ(OnePhaseCommits(c) - one, 11u) << nodes_[c]->name;
    EXPECT_EQ(TwoPhaseCommits(c) - two, 1u) << nodes_[c]->name;
  }
  // A multi-row write on three nodes still takes two phases.
  const uint64_t two = TwoPhaseCommits(0);
  Run(SessionOn(0), "UPDATE d.t SET n = n * 2");
  EXPECT_EQ(TwoPhaseCommits(0), two + 1);
  for (int n = 0; n < 3; ++n) {
    EXPECT_EQ(Query(SessionOn(n), "SELECT COUNT(*), SUM(n) FROM d.t"), std::vector<std::string>{"27|324"})
        << nodes_[n]->name;
  }
  ExpectReplicasIdentical();
  for (auto& n : nodes_) {
    EXPECT_EQ(n->data->prepared_count(), 0u) << n->name;
    EXPECT_EQ(n->engine->txn()->locks()->locks_held(), 0u) << n->name;
  }
  // Every coordinator's two-phase commits (the deletes) are forgotten.
  for (auto& n : nodes_) ASSERT_TRUE(n->data->TEST_DrainForgets(std::chrono::seconds(10))) << n->name;
  for (int n = 0; n < 3; ++n) EXPECT_EQ(DecisionRecords(n), 0u) << "one phase leaves no decision record";
}

// A transaction that writes nothing after a newest-version read (here a
// no-op UPDATE, whose row read is one) of a row whose commit the applier
// applied and the other node has not finished yet: it is answered only
// once that commit finished, so a snapshot taken after the answer, through
// any node, sees the version the read saw. (Issue 16: a client's no-op
// UPDATE acknowledged, then its next SELECT returned the value before it.)
TEST_F(OnePhaseTest, NoWriteTransactionAfterANewestVersionReadWaitsForTheCommitItSaw) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  Run(SessionOn(0), "INSERT INTO d.t VALUES (1, 1)");
  const Roles r = RolesOf(1);
  exec::Session* writer_session = SessionOn(r.third);
  exec::Session* noop_session = SessionOn(r.other);
  exec::Session* reader_session = SessionOn(r.other);
  std::mutex mu;
  std::condition_variable cv;
  bool applied = false, release = false;
  nodes_[r.third]->engine->txn()->TEST_SetAfterOnePhaseApply([&](const txn::DeciderPair&) {
    std::unique_lock l(mu);
    applied = true;
    cv.notify_all();
    cv.wait(l, [&] { return release; });
  });
  std::thread writer([&] { Run(writer_session, "UPDATE d.t SET n = 2 WHERE id = 1"); });
  {
    std::unique_lock l(mu);
    cv.wait(l, [&] { return applied; });
  }
  std::atomic<bool> answered{false};
  std::thread noop([&] {
    Run(noop_session, "UPDATE d.t SET n = 2 WHERE id = 1");  // sees 2 at the applier: changes nothing
    answered = true;
  });
  // The silence this test needs: a no-op answered within it (the bug) is
  // read at once, while the writer is still held.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (!answered && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::vector<std::string> seen;
  if (answered) seen = Query(reader_session, "SELECT n FROM d.t WHERE id = 1");
  {
    std::lock_guard l(mu);
    release = true;
  }
  cv.notify_all();
  writer.join();
  noop.join();
  nodes_[r.third]->engine->txn()->TEST_SetAfterOnePhaseApply(nullptr);
  if (!answered.load() || seen.empty()) seen = Query(reader_session, "SELECT n FROM d.t WHERE id = 1");
  EXPECT_EQ(seen, std::vector<std::string>{"2"}) << "a snapshot after the no-op's answer missed what it read";
}

// Failure before the prepare reached the other node: the client is told a
// failure only once that node confirmed it holds nothing, else 1180; no
// replica has the row either way.
TEST_F(OnePhaseTest, OtherNodeUnreachableBeforePrepare) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  const Roles r = RolesOf(1);
  exec::Session* s = SessionOn(r.third);
  CutOff(r.third, r.other, true);
  Status st = Fail(s, "INSERT INTO d.t VALUES (1, 1)");
  EXPECT_EQ(st.mysql_code(), 1180) << st.ToString();
  CutOff(r.third, r.other, false);
  for (auto& n : nodes_) EXPECT_EQ(n->data->prepared_count(), 0u) << n->name;
  for (int n = 0; n < 3; ++n) EXPECT_EQ(Query(SessionOn(n), "SELECT COUNT(*) FROM d.t"), std::vector<std::string>{"0"});
  ExpectReplicasIdentical();
  // The applier's lock of the row ends with the coordinator's transaction.
  Run(s, "INSERT INTO d.t VALUES (1, 2)");
  EXPECT_EQ(Query(SessionOn(r.applier), "SELECT n FROM d.t WHERE id = 1"), std::vector<std::string>{"2"});
}

// The coordinator is lost after the other node prepared, before the
// applier applied: the prepared node asks the applier, which has not
// applied, records the refusal and answers abort; a late apply from the
// coordinator is refused.
TEST_F(OnePhaseTest, CoordinatorLostAfterPrepareResolvesToAbortAndRefusesALateApply) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  const Roles r = RolesOf(1);
  Status st = InsertCutOffAfterPrepare(r);
  EXPECT_EQ(st.mysql_code(), 1180) << st.ToString();
  ASSERT_TRUE(deciders_.one_phase);
  EXPECT_EQ(deciders_.decider, nodes_[r.applier]->name);
  EXPECT_TRUE(record_.one_phase());
  EXPECT_EQ(nodes_[r.other]->data->prepared_count(), 1u);
  // The prepared record holds the read watermark below its timestamp.
  const auto held = nodes_[r.other]->data->PreparedTimestamps();
  EXPECT_EQ(held, std::vector<uint64_t>{record_.commit_ts()});
  nodes_[r.other]->data->TEST_ResolveNow();
  EXPECT_EQ(nodes_[r.other]->data->prepared_count(), 0u);
  EXPECT_EQ(DecisionRecords(r.applier), 1u) << "the refusal";
  // The coordinator's apply arrives late: refused, nothing written.
  CutOff(r.third, r.applier, false);
  CutOff(r.third, r.other, false);
  const txn::TxnKey key = RecordKey();
  bool refused = false;
  st = LateApply(r, &refused);
  EXPECT_FALSE(st.ok());
  EXPECT_TRUE(refused) << st.ToString();
  // Asked again, the applier gives the same answer.
  Result<bool> again = nodes_[r.other]->data->Decide(deciders_, key, false, record_.commit_ts());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_FALSE(*again);
  for (int n = 0; n < 3; ++n) EXPECT_EQ(Query(SessionOn(n), "SELECT COUNT(*) FROM d.t"), std::vector<std::string>{"0"});
  ExpectReplicasIdentical();
}

// The apply's answer does not come back (the applier cut off from the
// coordinator): 1180; the prepared node resolves from the applier.
TEST_F(OnePhaseTest, ApplyWithoutAnAnswerIsUnknownAndResolvedByThePreparedNode) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  const Roles r = RolesOf(1);
  nodes_[r.third]->engine->txn()->TEST_SetAfterOnePhasePrepare(
      [&](const txn::DeciderPair&) { CutOff(r.third, r.applier, true); });
  Status st = Fail(SessionOn(r.third), "INSERT INTO d.t VALUES (1, 1)");
  EXPECT_EQ(st.mysql_code(), 1180) << st.ToString();
  nodes_[r.third]->engine->txn()->TEST_SetAfterOnePhasePrepare(nullptr);
  CutOff(r.third, r.applier, false);
  EXPECT_EQ(nodes_[r.other]->data->prepared_count(), 1u) << "the coordinator may not abort what it does not know";
  nodes_[r.other]->data->TEST_ResolveNow();
  EXPECT_EQ(nodes_[r.other]->data->prepared_count(), 0u);
  for (int n = 0; n < 3; ++n) EXPECT_EQ(Query(SessionOn(n), "SELECT COUNT(*) FROM d.t"), std::vector<std::string>{"0"});
  ExpectReplicasIdentical();
}

// The coordinator is lost after the applier applied, before the other node
// finished: the client may have been answered (here it is, the decision is
// made); the prepared node learns the commit from the applier's replica.
TEST_F(OnePhaseTest, CoordinatorLostAfterApplyResolvesToCommit) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  const Roles r = RolesOf(1);
  for (int coordinator : {r.third, r.applier}) {
    SCOPED_TRACE("coordinator " + nodes_[coordinator]->name);
    Run(SessionOn(0), "DELETE FROM d.t");
    // The delete took two phases (no put to probe): its decision records
    // go with node 1's Forget queue, before the applier's are counted.
    ASSERT_TRUE(nodes_[0]->data->TEST_DrainForgets(std::chrono::seconds(10)));
    nodes_[coordinator]->engine->txn()->TEST_SetAfterOnePhaseApply(
        [&](const txn::DeciderPair&) { CutOff(coordinator, r.other, true); });
    Run(SessionOn(coordinator), "INSERT INTO d.t VALUES (1, 7)");  // acknowledged
    nodes_[coordinator]->engine->txn()->TEST_SetAfterOnePhaseApply(nullptr);
    CutOff(coordinator, r.other, false);
    EXPECT_EQ(nodes_[r.other]->data->prepared_count(), 1u);
    nodes_[r.other]->data->TEST_ResolveNow();
    EXPECT_EQ(nodes_[r.other]->data->prepared_count(), 0u);
    EXPECT_EQ(DecisionRecords(r.applier), 0u) << "a commit answer records nothing";
    for (int n = 0; n < 3; ++n) {
      EXPECT_EQ(Query(SessionOn(n), "SELECT n FROM d.t"), std::vector<std::string>{"7"}) << nodes_[n]->name;
    }
    ExpectReplicasIdentical();
    for (auto& n : nodes_) EXPECT_EQ(n->engine->txn()->locks()->locks_held(), 0u) << n->name;
  }
}

// The applier applied, then restarted (its locks gone) before the other
// node finished: the applied versions are in its WAL, and it answers
// commit from them.
TEST_F(OnePhaseTest, ApplierRestartedAfterApplyStillAnswersCommit) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  const Roles r = RolesOf(1);
  nodes_[r.third]->engine->txn()->TEST_SetAfterOnePhaseApply(
      [&](const txn::DeciderPair&) { CutOff(r.third, r.other, true); });
  Run(SessionOn(r.third), "INSERT INTO d.t VALUES (1, 7)");
  nodes_[r.third]->engine->txn()->TEST_SetAfterOnePhaseApply(nullptr);
  CutOff(r.third, r.other, false);
  RestartDataPath(nodes_[r.applier].get(), [] {});
  RestartDataPath(nodes_[r.other].get(), [] {});
  EXPECT_EQ(nodes_[r.other]->data->prepared_count(), 1u);
  nodes_[r.other]->data->TEST_ResolveNow();
  EXPECT_EQ(nodes_[r.other]->data->prepared_count(), 0u);
  for (int n = 0; n < 3; ++n) EXPECT_EQ(Query(SessionOn(n), "SELECT n FROM d.t"), std::vector<std::string>{"7"});
  ExpectReplicasIdentical();
}

// The applier restarted after the other node prepared and before the
// apply: its row locks are gone (another writer may have taken them), so it
// refuses the apply; the coordinator has the prepared share discarded and
// answers a plain failure.
TEST_F(OnePhaseTest, ApplierRestartedBeforeApplyRefusesIt) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  const Roles r = RolesOf(1);
  nodes_[r.third]->engine->txn()->TEST_SetAfterOnePhasePrepare([&](const txn::DeciderPair&) {
    RestartDataPath(nodes_[r.applier].get(), [] {});
    // The coordinator's channel to the restarted server reconnects.
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  });
  Status st = Fail(SessionOn(r.third), "INSERT INTO d.t VALUES (1, 1)");
  nodes_[r.third]->engine->txn()->TEST_SetAfterOnePhasePrepare(nullptr);
  if (st.mysql_code() == 1180) {
    // The apply met the channel still down (no answer): the prepared node
    // resolves it, and the applier, which did not apply, answers abort.
    nodes_[r.other]->data->TEST_ResolveNow();
  } else {
    EXPECT_EQ(st.mysql_code(), 1205) << st.ToString();
  }
  for (auto& n : nodes_) EXPECT_EQ(n->data->prepared_count(), 0u) << n->name;
  for (int n = 0; n < 3; ++n) EXPECT_EQ(Query(SessionOn(n), "SELECT COUNT(*) FROM d.t"), std::vector<std::string>{"0"});
  ExpectReplicasIdentical();
  Run(SessionOn(r.third), "INSERT INTO d.t VALUES (1, 2)");
  EXPECT_EQ(Query(SessionOn(r.other), "SELECT n FROM d.t"), std::vector<std::string>{"2"});
}

// The applier applied and was then lost (stopped, removed from the
// membership) before the other node finished: the prepared node, unable
// to ask, presumes commit, which is the outcome the client was given; a
// late Finish(abort) is answered 1180, not OK.
TEST_F(OnePhaseTest, ApplierLostAfterApplyIsPresumedCommitted) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  const Roles r = RolesOf(1);
  Capture(r.third, r.other);
  nodes_[r.third]->engine->txn()->TEST_SetAfterOnePhaseApply([&](const txn::DeciderPair&) {
    RemoveNode(r.applier);
    CutOff(r.third, r.other, true);
  });
  Run(SessionOn(r.third), "INSERT INTO d.t VALUES (1, 7)");  // acknowledged
  nodes_[r.third]->engine->txn()->TEST_SetAfterOnePhaseApply(nullptr);
  CutOff(r.third, r.other, false);
  EXPECT_EQ(nodes_[r.other]->data->prepared_count(), 1u);
  nodes_[r.other]->data->TEST_ResolveNow();
  EXPECT_EQ(nodes_[r.other]->data->prepared_count(), 0u);
  EXPECT_EQ(PresumedRecords(r.other), 1u);
  // The survivor holds exactly what the lost applier applied.
  ExpectReplicasIdentical();
  EXPECT_EQ(nodes_[r.other]->engine->txn()->locks()->locks_held(), 0u);
  const txn::TxnKey key = RecordKey();
  Status st = nodes_[r.third]->data->Finish(nodes_[r.other]->name, key, /*commit=*/false);
  EXPECT_EQ(st.mysql_code(), 1180) << st.ToString();
}

// The applier was lost before it applied: the coordinator cannot tell
// (1180); the prepared node presumes commit once the applier left. No
// client was told otherwise, and no reader saw the row before: the
// prepared record held the read watermark below its timestamp until then.
TEST_F(OnePhaseTest, ApplierLostBeforeApplyIsPresumedCommittedConsistently) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  const Roles r = RolesOf(1);
  nodes_[r.third]->engine->txn()->TEST_SetAfterOnePhasePrepare([&](const txn::DeciderPair& d) {
    deciders_ = d;
    record_ = PreparedRecord(r.other);
    RemoveNode(r.applier);
  });
  Status st = Fail(SessionOn(r.third), "INSERT INTO d.t VALUES (1, 7)");
  EXPECT_EQ(st.mysql_code(), 1180) << st.ToString();
  nodes_[r.third]->engine->txn()->TEST_SetAfterOnePhasePrepare(nullptr);
  EXPECT_EQ(nodes_[r.other]->data->PreparedTimestamps(), std::vector<uint64_t>{record_.commit_ts()});
  nodes_[r.other]->data->TEST_ResolveNow();
  EXPECT_EQ(nodes_[r.other]->data->prepared_count(), 0u);
  EXPECT_TRUE(nodes_[r.other]->data->PreparedTimestamps().empty());
  // The survivor's replica has the row at the transaction's timestamp.
  storage::SliceId slice = record_.writes(0).slice();
  auto stored = nodes_[r.other]->engine->slices()->GetSlice(slice);
  ASSERT_TRUE(stored.ok());
  std::string value;
  EXPECT_TRUE((*stored)
                  ->Get(storage::EncodeVersionKey(record_.writes(0).keys(0), record_.commit_ts()), &value)
                  .ok());
  const txn::TxnKey key = RecordKey();
  st = nodes_[r.third]->data->Finish(nodes_[r.other]->name, key, /*commit=*/false);
  EXPECT_EQ(st.mysql_code(), 1180) << st.ToString();
}

// While a one-phase transaction is prepared at the other node and its
// outcome unknown, a later writer of the same row there waits for it (so
// no write can go past a transaction that may yet be presumed committed).
TEST_F(OnePhaseTest, WriterOfAPreparedOnePhaseRowWaitsForItsOutcome) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  const Roles r = RolesOf(1);
  Status st = InsertCutOffAfterPrepare(r);
  EXPECT_EQ(st.mysql_code(), 1180) << st.ToString();
  CutOff(r.third, r.applier, false);
  CutOff(r.third, r.other, false);
  // Another transaction's prepare of the same row at the other node.
  const txn::TxnKey later{nodes_[r.applier]->name, 424242};
  std::atomic<bool> done{false};
  Status later_st;
  txn::DeciderPair two_phase;
  two_phase.decider = nodes_[r.applier]->name;
  std::thread writer([&] {
    later_st = nodes_[r.applier]->data->Prepare(nodes_[r.other]->name, later, record_.commit_ts() + 1000,
                                                WritesOf(record_), two_phase);
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_FALSE(done.load()) << "the later prepare went past the one in doubt";
  nodes_[r.other]->data->TEST_ResolveNow();  // the first resolves (to abort)
  writer.join();
  EXPECT_TRUE(later_st.ok()) << later_st.ToString();
  EXPECT_TRUE(nodes_[r.applier]->data->Finish(nodes_[r.other]->name, later, /*commit=*/false).ok());
  for (auto& n : nodes_) EXPECT_EQ(n->data->prepared_count(), 0u) << n->name;
}


// Helpers for the tests of a prepare that got no answer: whether node n's
// replica holds the captured record's first key at its timestamp, and
// node n's decision record of the captured transaction ("" when none).
class OnePhasePrepareLostTest : public OnePhaseTest {
 protected:
  bool HasVersionOfRecord(int n) {
    auto slice = nodes_[n]->engine->slices()->GetSlice(record_.writes(0).slice());
    if (!slice.ok()) return false;
    std::string value;
    return (*slice)
        ->Get(storage::EncodeVersionKey(record_.writes(0).keys(0), record_.commit_ts()), &value)
        .ok();
  }
  std::string DecisionOfRecord(int n) {
    std::string value;
    const Status st = nodes_[n]->engine->meta()->Get(
        "txn/decision/" + RecordKey().ToString(), &value);
    return st.ok() ? value : std::string();
  }
  // The applier's refusal: "A", then the transaction's two nodes (in name
  // order), which the sweep of decision records asks.
  std::string RefusalOf(const Roles& r) {
    std::string a = nodes_[r.applier]->name, b = nodes_[r.other]->name;
    if (b < a) std::swap(a, b);
    return "A\n" + a + "\n" + b;
  }
  // The coordinator's next one-phase prepare: the other node prepares, and
  // its answer is lost; `then` runs (cut the node off, remove it, ...).
  void LoseNextPrepareAnswer(int coordinator, int other, std::function<void()> then) {
    auto once = std::make_shared<std::atomic<bool>>(false);
    nodes_[coordinator]->engine->txn()->TEST_SetOnePhasePrepareAnswer(
        [this, other, once, then](const txn::DeciderPair& d, Status st) {
          if (!st.ok() || once->exchange(true)) return st;
          deciders_ = d;
          record_ = PreparedRecord(other);
          then();
          return Status::Sql(1047, "Node holding a slice replica did not answer (test: the answer was lost)");
        });
  }
  // Inserts row (1, 1) through the third node; the other node's answer to
  // its prepare is lost and it stays cut off from the third past a 1 s
  // wait (reachable again afterwards): the statement's error.
  Status InsertWithPrepareAnswerLost(const Roles& r) {
    nodes_[r.third]->engine->txn()->TEST_SetPrepareLostWait(std::chrono::milliseconds(1000));
    LoseNextPrepareAnswer(r.third, r.other, [this, r] { CutOff(r.third, r.other, true); });
    Status st = Fail(SessionOn(r.third), "INSERT INTO d.t VALUES (1, 1)");
    nodes_[r.third]->engine->txn()->TEST_SetOnePhasePrepareAnswer(nullptr);
    nodes_[r.third]->engine->txn()->TEST_SetPrepareLostWait(std::chrono::milliseconds(8000));
    CutOff(r.third, r.other, false);
    return st;
  }
};

// The other node prepared, its answer was lost, and the node left the
// cluster: the coordinator has the applier record the refusal (never
// sending the apply), releases the row locks there, and answers the
// retryable 1047 (not 1180) once the node is gone. Nothing is applied
// anywhere; the lost node's record, resolved, asks the applier: abort.
TEST_F(OnePhasePrepareLostTest, OtherNodeLostWithThePrepareInFlightIsRetryable) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  const Roles r = RolesOf(1);
  LoseNextPrepareAnswer(r.third, r.other, [&] {
    CutOff(r.third, r.other, true);
    RemoveNode(r.other);
  });
  exec::Session* s = SessionOn(r.third);
  Run(s, "BEGIN");
  Run(s, "INSERT INTO d.t VALUES (1, 1)");
  const auto started = std::chrono::steady_clock::now();
  Status st = Fail(s, "COMMIT");
  EXPECT_EQ(st.mysql_code(), 1047) << st.ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(6)) << "no wait once the node left";
  nodes_[r.third]->engine->txn()->TEST_SetOnePhasePrepareAnswer(nullptr);
  ASSERT_TRUE(deciders_.one_phase);
  EXPECT_EQ(deciders_.decider, nodes_[r.applier]->name);
  // The refusal is recorded at the applier before anyone asked, and its
  // locks are gone.
  EXPECT_EQ(DecisionOfRecord(r.applier), RefusalOf(r));
  EXPECT_EQ(nodes_[r.applier]->engine->txn()->locks()->locks_held(), 0u);
  EXPECT_EQ(nodes_[r.other]->data->prepared_count(), 1u) << "the lost node kept its record";
  for (int n = 0; n < 3; ++n) EXPECT_FALSE(HasVersionOfRecord(n)) << nodes_[n]->name;
  // The lost node's resolver asks the applier (its own client channel still
  // works): abort, nothing applied.
  nodes_[r.other]->data->TEST_ResolveNow();
  EXPECT_EQ(nodes_[r.other]->data->prepared_count(), 0u);
  EXPECT_EQ(PresumedRecords(r.other), 0u);
  for (int n = 0; n < 3; ++n) EXPECT_FALSE(HasVersionOfRecord(n)) << nodes_[n]->name;
  ExpectReplicasIdentical();
}

// The other node prepared, its answer was lost, and it stays cut off from
// the coordinator (a member): after the bounded wait the client gets 1180,
// as before (the node may outlive the applier and presume commit); but the
// applier recorded the refusal before anyone asked, so the prepared node's
// resolver, asking, gets abort, and a late apply is refused.
TEST_F(OnePhasePrepareLostTest, PreparedNodeThatAsksAfterALostAnswerResolvesToAbort) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  const Roles r = RolesOf(1);
  Status st = InsertWithPrepareAnswerLost(r);
  EXPECT_EQ(st.mysql_code(), 1180) << st.ToString();
  // Recorded by the coordinator, before the prepared node asked.
  EXPECT_EQ(DecisionOfRecord(r.applier), RefusalOf(r));
  EXPECT_EQ(nodes_[r.applier]->engine->txn()->locks()->locks_held(), 0u);
  EXPECT_EQ(nodes_[r.other]->data->prepared_count(), 1u);
  nodes_[r.other]->data->TEST_ResolveNow();
  EXPECT_EQ(nodes_[r.other]->data->prepared_count(), 0u);
  for (int n = 0; n < 3; ++n) EXPECT_FALSE(HasVersionOfRecord(n)) << nodes_[n]->name;
  // A late apply of the transaction at the applier is refused.
  bool refused = false;
  st = LateApply(r, &refused);
  EXPECT_FALSE(st.ok());
  EXPECT_TRUE(refused) << st.ToString();
  for (int n = 0; n < 3; ++n) EXPECT_FALSE(HasVersionOfRecord(n)) << nodes_[n]->name;
  ExpectReplicasIdentical();
}

// The other node prepared, its answer was lost, and it comes back within
// the wait: it discards its share on the coordinator's Finish(abort), the
// statement gets 1047 and, autocommit, is run again inside the cluster
// (Shale_statement_retries) and commits once.
TEST_F(OnePhasePrepareLostTest, OtherNodeBackWithinTheWaitDiscardsAndTheStatementIsRetried) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  const Roles r = RolesOf(1);
  std::thread reconnect;
  LoseNextPrepareAnswer(r.third, r.other, [&] {
    CutOff(r.third, r.other, true);
    reconnect = std::thread([this, r] {
      std::this_thread::sleep_for(std::chrono::milliseconds(1000));
      CutOff(r.third, r.other, false);
    });
  });
  const uint64_t retries = exec::Session::StatementRetries();
  Run(SessionOn(r.third), "INSERT INTO d.t VALUES (1, 5)");
  reconnect.join();
  nodes_[r.third]->engine->txn()->TEST_SetOnePhasePrepareAnswer(nullptr);
  EXPECT_GT(exec::Session::StatementRetries(), retries);
  EXPECT_EQ(DecisionOfRecord(r.applier), RefusalOf(r)) << "the first attempt was refused at the applier";
  for (int n = 0; n < 3; ++n) EXPECT_FALSE(HasVersionOfRecord(n)) << "the first attempt applied at " << nodes_[n]->name;
  for (auto& n : nodes_) EXPECT_EQ(n->data->prepared_count(), 0u) << n->name;
  for (int n = 0; n < 3; ++n) {
    EXPECT_EQ(Query(SessionOn(n), "SELECT id, n FROM d.t"), std::vector<std::string>{"1|5"}) << nodes_[n]->name;
  }
  ExpectReplicasIdentical();
}

// The applier's refusal names the transaction's two nodes, and the sweep
// of decision records drops it once no one needs it: kept while the other
// node holds the transaction prepared, dropped once that node resolved it
// (the coordinator's commit is over). An old refusal without nodes (a bare
// "A") is kept.
TEST_F(OnePhasePrepareLostTest, RefusalIsSweptOnceThePreparedNodeResolved) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  const Roles r = RolesOf(1);
  Status st = InsertWithPrepareAnswerLost(r);
  EXPECT_EQ(st.mysql_code(), 1180) << st.ToString();
  ASSERT_EQ(DecisionOfRecord(r.applier), RefusalOf(r));
  EXPECT_EQ(CountedDecisionRecords(), 1u) << "a refusal naming its nodes is counted";
  // An old-format refusal (before refusals named the nodes): kept for good.
  const std::string old_refusal = "txn/decision/" + nodes_[r.third]->name + "/999999";
  ASSERT_TRUE(nodes_[r.applier]->engine->meta()->Put(old_refusal, "A").ok());
  ASSERT_EQ(nodes_[r.other]->data->prepared_count(), 1u);
  EXPECT_EQ(SweepEveryNode(), 0u) << "the other node holds the transaction prepared";
  EXPECT_EQ(DecisionOfRecord(r.applier), RefusalOf(r));
  nodes_[r.other]->data->TEST_ResolveNow();  // abort, from the refusal
  EXPECT_EQ(nodes_[r.other]->data->prepared_count(), 0u);
  EXPECT_EQ(SweepEveryNode(), 1u);
  EXPECT_EQ(DecisionOfRecord(r.applier), "");
  EXPECT_EQ(CountedDecisionRecords(), 0u);
  std::string value;
  EXPECT_TRUE(nodes_[r.applier]->engine->meta()->Get(old_refusal, &value).ok()) << "the old refusal was swept";
  for (int n = 0; n < 3; ++n) EXPECT_FALSE(HasVersionOfRecord(n)) << nodes_[n]->name;
  ExpectReplicasIdentical();
}

// The coordinator was cut off after the other node prepared: its apply may
// still reach the applier, which holds the transaction's row locks. The
// refusal the other node's resolver records there is kept while the locks
// are held (an apply is accepted only then), and goes once they are gone
// (here: the late apply, refused, releases them). Asked again after that,
// the applier answers abort again (the probe is still absent).
TEST_F(OnePhasePrepareLostTest, RefusalIsKeptWhileTheApplierHoldsTheLocks) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  const Roles r = RolesOf(1);
  Status st = InsertCutOffAfterPrepare(r);
  EXPECT_EQ(st.mysql_code(), 1180) << st.ToString();
  nodes_[r.other]->data->TEST_ResolveNow();
  EXPECT_EQ(nodes_[r.other]->data->prepared_count(), 0u);
  ASSERT_EQ(DecisionOfRecord(r.applier), RefusalOf(r));
  EXPECT_GT(nodes_[r.applier]->engine->txn()->locks()->locks_held(), 0u) << "the coordinator's unlock was cut off";
  EXPECT_EQ(SweepEveryNode(), 0u) << "the applier holds the transaction's locks";
  EXPECT_EQ(DecisionOfRecord(r.applier), RefusalOf(r));
  CutOff(r.third, r.applier, false);
  CutOff(r.third, r.other, false);
  bool refused = false;
  st = LateApply(r, &refused);
  EXPECT_TRUE(refused) << st.ToString();
  EXPECT_EQ(nodes_[r.applier]->engine->txn()->locks()->locks_held(), 0u);
  EXPECT_EQ(SweepEveryNode(), 1u);
  EXPECT_EQ(DecisionOfRecord(r.applier), "");
  EXPECT_EQ(CountedDecisionRecords(), 0u);
  Result<bool> again = nodes_[r.other]->data->Decide(deciders_, RecordKey(), false, record_.commit_ts());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_FALSE(*again);
  for (int n = 0; n < 3; ++n) EXPECT_FALSE(HasVersionOfRecord(n)) << nodes_[n]->name;
  ExpectReplicasIdentical();
}

// A presumption mark is kept while the coordinator's commit is in progress
// (it may still send Finish(abort) and report the answer), and swept once
// it is over.
TEST_F(OnePhaseTest, PresumptionMarkIsSweptOnceTheCoordinatorIsDone) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  const Roles r = RolesOf(1);
  Capture(r.third, r.other);
  size_t kept = 0;
  nodes_[r.third]->engine->txn()->TEST_SetAfterOnePhaseApply([&](const txn::DeciderPair&) {
    RemoveNode(r.applier);
    CutOff(r.third, r.other, true);
    nodes_[r.other]->data->TEST_ResolveNow();  // presumed committed
    SweepEveryNode();
    kept = PresumedRecords(r.other);
  });
  Run(SessionOn(r.third), "INSERT INTO d.t VALUES (1, 7)");  // acknowledged
  nodes_[r.third]->engine->txn()->TEST_SetAfterOnePhaseApply(nullptr);
  CutOff(r.third, r.other, false);
  EXPECT_EQ(kept, 1u) << "the mark stays while the coordinator commits";
  EXPECT_EQ(nodes_[r.other]->data->prepared_count(), 0u);
  EXPECT_EQ(PresumedRecords(r.other), 1u);
  const txn::TxnKey key = RecordKey();
  Status st = nodes_[r.third]->data->Finish(nodes_[r.other]->name, key, /*commit=*/false);
  EXPECT_EQ(st.mysql_code(), 1180) << st.ToString();
  SweepEveryNode();
  EXPECT_EQ(PresumedRecords(r.other), 0u) << "the coordinator's commit is over";
  ExpectReplicasIdentical();
}

// A prepared node that was removed with a one-phase prepare in flight
// (its client told 1047) comes back after the applier has left too: where
// its presumed commit may go. The data paths see their node's applied slice
// map (placed_here, as in shaled).
class OnePhaseRejoinTest : public OnePhasePrepareLostTest {
 protected:
  bool WirePlacedHere() const override { return true; }

  // The other node prepares, its answer is lost and it is removed from the
  // membership: the commit fails with 1047 and the node keeps its record.
  // Then the applier leaves the cluster, and the other node restarts
  // (its record is loaded) and rejoins.
  void LoseOtherThenApplier(const Roles& r) {
    LoseNextPrepareAnswer(r.third, r.other, [&] {
      CutOff(r.third, r.other, true);
      RemoveNode(r.other);
    });
    exec::Session* s = SessionOn(r.third);
    Run(s, "BEGIN");
    Run(s, "INSERT INTO d.t VALUES (1, 1)");
    Status st = Fail(s, "COMMIT");
    EXPECT_EQ(st.mysql_code(), 1047) << st.ToString();
    nodes_[r.third]->engine->txn()->TEST_SetOnePhasePrepareAnswer(nullptr);
    CutOff(r.third, r.other, false);
    ASSERT_TRUE(deciders_.one_phase);
    ASSERT_EQ(deciders_.decider, nodes_[r.applier]->name);
    ASSERT_EQ(record_.writes_size(), 1);
    RemoveNode(r.applier);
    SetAddress(nodes_[r.other]->name, "127.0.0.1:" + std::to_string(nodes_[r.other]->port));  // rejoins
    RestartDataPath(nodes_[r.other].get(), [] {});
    ASSERT_EQ(nodes_[r.other]->data->prepared_count(), 1u) << "the record was loaded";
  }

  // The rejoined node's slice map: the record's slice is served by the
  // third node alone (it was rebuilt there while the two were gone) and,
  // with `building`, has a new building replica on the rejoined node.
  void ReplaceRecordSlice(const Roles& r, bool building) {
    const storage::SliceId slice = record_.writes(0).slice();
    catalog::Catalog* cat = nodes_[r.other]->engine->catalog();
    auto current = cat->GetTable("d", "t");
    ASSERT_TRUE(current.ok());
    catalog::TableDef def = **current;
    bool found = false;
    for (auto& sd : def.primary.slices) {
      if (sd.id != slice) continue;
      found = true;
      sd.replicas = {nodes_[r.third]->name};
      sd.building.clear();
      if (building) sd.building.push_back(catalog::BuildingReplica{nodes_[r.other]->name, 7, nodes_[r.third]->name, 0});
      sd.SyncWriteReplicas();
    }
    ASSERT_TRUE(found);
    ASSERT_TRUE(cat->ReplaceTable(*current, def).ok());
  }
};

// Its new replica of the transaction's slice is still building when the
// record is resolved: the presumed commit skips it (it is being filled from
// the third node, which never had the transaction; the share would be a
// row no other replica holds). The presumption is still recorded, so a late
// Finish(abort) is not answered OK.
TEST_F(OnePhaseRejoinTest, PresumedCommitSkipsABuildingReplica) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  const Roles r = RolesOf(1);
  LoseOtherThenApplier(r);
  ReplaceRecordSlice(r, /*building=*/true);
  const storage::SliceId slice = record_.writes(0).slice();
  TestNode* b = nodes_[r.other].get();
  auto state = b->engine->slices()->GetBuildState(slice);
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  ASSERT_EQ(state->state, storage::SliceState::kBuilding) << "a new building replica replaced the old one";
  ASSERT_TRUE(b->engine->PlacedHere(slice));
  b->data->TEST_ResolveNow();  // the applier cannot be asked: presumed committed
  EXPECT_EQ(b->data->prepared_count(), 0u);
  EXPECT_EQ(PresumedRecords(r.other), 1u);
  EXPECT_FALSE(HasVersionOfRecord(r.other)) << "the presumed commit wrote into the building replica";
  EXPECT_EQ(b->engine->slices()->GetBuildState(slice)->state, storage::SliceState::kBuilding);
  EXPECT_EQ(b->engine->txn()->locks()->locks_held(), 0u);
  const txn::TxnKey key = RecordKey();
  Status st = nodes_[r.third]->data->Finish(b->name, key, /*commit=*/false);
  EXPECT_EQ(st.mysql_code(), 1180) << st.ToString();
}

// Its map no longer places the slice here (the rejoined node has its old
// storage slice still, retired, not yet dropped): the presumed commit skips
// it too.
TEST_F(OnePhaseRejoinTest, PresumedCommitSkipsASliceNotPlacedHere) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  const Roles r = RolesOf(1);
  LoseOtherThenApplier(r);
  ReplaceRecordSlice(r, /*building=*/false);
  const storage::SliceId slice = record_.writes(0).slice();
  TestNode* b = nodes_[r.other].get();
  ASSERT_TRUE(b->engine->slices()->GetSlice(slice).ok()) << "the old storage slice is kept for a while";
  ASSERT_FALSE(b->engine->PlacedHere(slice));
  b->data->TEST_ResolveNow();
  EXPECT_EQ(b->data->prepared_count(), 0u);
  EXPECT_EQ(PresumedRecords(r.other), 1u);
  EXPECT_FALSE(HasVersionOfRecord(r.other)) << "the presumed commit wrote into a slice not placed here";
}

// The normal presumed commit, with the node's slice map seen: the replica
// is placed here and built, so the share is applied (the applier was lost
// before it applied; the client got 1180).
TEST_F(OnePhaseRejoinTest, PresumedCommitAppliesToAPlacedBuiltReplica) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  const Roles r = RolesOf(1);
  nodes_[r.third]->engine->txn()->TEST_SetAfterOnePhasePrepare([&](const txn::DeciderPair& d) {
    deciders_ = d;
    record_ = PreparedRecord(r.other);
    RemoveNode(r.applier);
  });
  Status st = Fail(SessionOn(r.third), "INSERT INTO d.t VALUES (1, 7)");
  EXPECT_EQ(st.mysql_code(), 1180) << st.ToString();
  nodes_[r.third]->engine->txn()->TEST_SetAfterOnePhasePrepare(nullptr);
  const storage::SliceId slice = record_.writes(0).slice();
  ASSERT_TRUE(nodes_[r.other]->engine->PlacedHere(slice));
  ASSERT_EQ(nodes_[r.other]->engine->slices()->GetBuildState(slice)->state, storage::SliceState::kReady);
  nodes_[r.other]->data->TEST_ResolveNow();
  EXPECT_EQ(nodes_[r.other]->data->prepared_count(), 0u);
  EXPECT_EQ(PresumedRecords(r.other), 1u);
  EXPECT_TRUE(HasVersionOfRecord(r.other)) << "the presumed commit skipped a placed, built replica";
}

// A one-phase commit made while the other node's replica of the slice is
// building (its only serving replica is on the applier, which the copy
// reads): the prepared node's share goes into the building replica also
// when it learns the commit from the applier rather than from the
// coordinator (the copy's snapshot may be below the commit: the build
// needs that write). Only a presumed commit skips a building replica.
TEST_F(OnePhaseRejoinTest, CommitLearnedFromTheApplierReachesABuildingReplica) {
  CreatePlacedTable("CREATE TABLE d.t (id INT PRIMARY KEY, n INT) SLICES=6");
  const Roles r = RolesOf(1);
  // The slice of row 1, from the prepared record of a first insert.
  Capture(r.third, r.other);
  Run(SessionOn(r.third), "INSERT INTO d.t VALUES (1, 1)");
  nodes_[r.third]->engine->txn()->TEST_SetAfterOnePhasePrepare(nullptr);
  const storage::SliceId slice = record_.writes(0).slice();
  // Every node's map: the slice is served by the applier alone and
  // building on the other node (as the rebalancer re-protects it).
  for (auto& n : nodes_) {
    catalog::Catalog* cat = n->engine->catalog();
    auto current = cat->GetTable("d", "t");
    ASSERT_TRUE(current.ok());
    catalog::TableDef def = **current;
    for (auto& sd : def.primary.slices) {
      if (sd.id != slice) continue;
      sd.replicas = {nodes_[r.applier]->name};
      sd.building = {catalog::BuildingReplica{nodes_[r.other]->name, 7, nodes_[r.applier]->name, 0}};
      sd.SyncWriteReplicas();
    }
    ASSERT_TRUE(cat->ReplaceTable(*current, def).ok()) << n->name;
  }
  TestNode* b = nodes_[r.other].get();
  ASSERT_EQ(b->engine->slices()->GetBuildState(slice)->state, storage::SliceState::kBuilding);
  // The coordinator is cut off from the other node after the apply: the
  // client is answered, and the other node learns the commit from the
  // applier.
  Capture(r.third, r.other);
  nodes_[r.third]->engine->txn()->TEST_SetAfterOnePhaseApply(
      [&](const txn::DeciderPair&) { CutOff(r.third, r.other, true); });
  Run(SessionOn(r.third), "UPDATE d.t SET n = 9 WHERE id = 1");
  nodes_[r.third]->engine->txn()->TEST_SetAfterOnePhaseApply(nullptr);
  nodes_[r.third]->engine->txn()->TEST_SetAfterOnePhasePrepare(nullptr);
  CutOff(r.third, r.other, false);
  ASSERT_EQ(record_.writes(0).slice(), slice);
  EXPECT_EQ(b->data->prepared_count(), 1u);
  b->data->TEST_ResolveNow();
  EXPECT_EQ(b->data->prepared_count(), 0u);
  EXPECT_EQ(PresumedRecords(r.other), 0u);
  EXPECT_TRUE(HasVersionOfRecord(r.other)) << "the building replica missed a commit made during its build";
  EXPECT_TRUE(HasVersionOfRecord(r.applier));
}

}  // namespace
}  // namespace shale::cluster

// Requests routed by an older slice map, in one process: four exec::Engines
// with their own data directories and SliceService on real gRPC servers
// over loopback, and one command log whose entries each node applies in
// order — all of them at once, except nodes the test holds back, which
// apply the log only when they are made to catch up (as a Raft follower
// that has not heard of the newest commit yet: `await_applied` and the
// transaction layer's metadata sync catch it up).
//
// A replica is moved away from the slice's ranking node A (the rebalancer's
// move: a building replica on C promoted, A dropped) while A and a reader D
// still hold the old map. Rows written through the new map reach B and C
// only. Reads and writes through D (routed to A by its old map) and
// through A itself must then fail with the retryable 1047 or see the new
// rows — never answer from A's stale replica, never write only to A and B
// (docs/cluster.md "Data path", invariant 6).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "src/catalog/catalog.pb.h"
#include "src/cluster/rpc_server.h"
#include "src/cluster/slice_service.h"
#include "src/cluster/testing/in_process_cluster.h"
#include "src/common/testing/temp_dir.h"
#include "src/exec/engine.h"
#include "src/exec/pushdown.h"
#include "src/exec/session.h"
#include "sierra/logical.h"
#include "sierra/serialize.h"
#include "storage/slice_stream.h"

namespace shale::cluster {
namespace {

struct TestNode {
  std::string name;
  std::unique_ptr<exec::Engine> engine;
  std::unique_ptr<SliceService> data;
  std::unique_ptr<RpcServer> rpc;
  uint64_t applied = 0;  // GUARDED_BY(StaleRouteTest::log_mu_)
  bool held = false;     // GUARDED_BY(StaleRouteTest::log_mu_)
};

class StaleRouteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    in_process::OpenNodes(dir_.path(), 4, /*default_slices=*/4, &nodes_);
    ASSERT_EQ(nodes_.size(), 4u);
    const auto address_of = addresses_.Lookup();
    for (auto& n : nodes_) {
      TestNode* raw = n.get();
      raw->engine->catalog()->SetSubmitter([this, raw](const std::string& command) { return Submit(raw, command); });
      exec::ClusterHooks hooks;
      hooks.members = [] { return std::vector<std::string>{"n1", "n2", "n3", "n4"}; };
      raw->engine->SetClusterHooks(hooks);
      SliceServiceOptions o;
      o.node_name = n->name;
      o.address_of = address_of;
      o.rpc_timeout_ms = 5000;
      o.applied_index = [this, raw] {
        std::lock_guard lock(log_mu_);
        return raw->applied;
      };
      o.await_applied = [this, raw](uint64_t index, std::chrono::milliseconds) {
        std::lock_guard lock(log_mu_);
        CatchUpLocked(raw, index);
        return raw->applied >= index;
      };
      o.placed_here = [raw](storage::SliceId id) { return raw->engine->PlacedHere(id); };
      o.serves_here = [raw](storage::SliceId id) { return raw->engine->ServingToken(id) != 0; };
      o.ranks_here = [raw](storage::SliceId id) { return raw->engine->RanksHere(id); };
      o.compile_fragment = in_process::FragmentCompilerOf(raw->engine.get());
      auto data = SliceService::Open(n->engine->txn(), n->engine->slices(), n->engine->meta(), o);
      ASSERT_TRUE(data.ok()) << data.status().ToString();
      n->data = std::move(data).value();
      n->engine->SetDataRouter(n->data.get());
      // The metadata sync after a snapshot or commit timestamp: the node
      // catches up with everything committed so far.
      n->engine->txn()->SetRoutingChecks(
          [this, raw] {
            std::lock_guard lock(log_mu_);
            CatchUpLocked(raw, log_.size());
          },
          [raw](storage::SliceId id) { return raw->engine->ServingToken(id); });
      n->rpc = std::make_unique<RpcServer>(NodeIdentity{NewNodeId(), n->name});
      n->rpc->AddService(n->data->service());
      n->data->RegisterLink(n->rpc->link());
      ASSERT_TRUE(n->rpc->Start("127.0.0.1:0").ok());
      addresses_.Set(n->name, "127.0.0.1:" + std::to_string(n->rpc->port()));
    }
  }

  void TearDown() override {
    for (auto& n : nodes_) n->rpc->Shutdown();
    for (auto& n : nodes_) n->engine->SetDataRouter(nullptr);
    for (auto& n : nodes_) n->data.reset();
    nodes_.clear();
  }

  // REQUIRES: log_mu_ held.
  catalog::CommandResult CatchUpLocked(TestNode* n, uint64_t index) {
    catalog::CommandResult last;
    while (n->applied < index && n->applied < log_.size()) {
      ++n->applied;
      last = n->engine->catalog()->ApplyCommand(log_[n->applied - 1], n->applied);
    }
    return last;
  }

  // The command log: appended, applied by every node not held back (and by
  // the submitter, which waits for its own command, as in Raft).
  catalog::CommandResult Submit(TestNode* from, const std::string& command) {
    std::lock_guard lock(log_mu_);
    log_.push_back(command);
    catalog::CommandResult mine;
    for (auto& n : nodes_) {
      if (n->held && n.get() != from) continue;
      catalog::CommandResult r = CatchUpLocked(n.get(), log_.size());
      if (n.get() == from) mine = r;
    }
    return mine;
  }

  void Hold(const std::string& name) {
    std::lock_guard lock(log_mu_);
    nodes_[Index(name)]->held = true;
  }

  int Index(const std::string& name) {
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (nodes_[i]->name == name) return static_cast<int>(i);
    }
    ADD_FAILURE() << "no node " << name;
    return 0;
  }

  void Run(exec::Session* s, std::string_view sql) {
    auto results = s->Execute(sql);
    ASSERT_FALSE(results.empty()) << sql;
    for (const auto& r : results) ASSERT_TRUE(r.ok()) << sql << ": " << r.status().ToString();
  }

  // Runs `sql` until it succeeds, counting the retryable 1047s that reach
  // the client (anything else fails the test; the session retries an
  // autocommit statement itself first: Session::StatementRetries).
  exec::StatementResult RunRetrying(exec::Session* s, std::string_view sql, int* refused) {
    for (int attempt = 0; attempt < 20; ++attempt) {
      auto results = s->Execute(sql);
      EXPECT_FALSE(results.empty()) << sql;
      if (results.empty()) return {};
      if (results.back().ok()) return *results.back();
      EXPECT_EQ(results.back().status().mysql_code(), 1047) << sql << ": " << results.back().status().ToString();
      if (results.back().status().mysql_code() != 1047) return {};
      ++*refused;
    }
    ADD_FAILURE() << sql << ": still refused after 20 attempts";
    return {};
  }

  static int64_t FirstInt(const exec::StatementResult& r) {
    if (r.rows.empty() || r.rows[0].empty() || !r.rows[0][0].is_int()) return -1;
    return r.rows[0][0].as_int();
  }

  // The newest version of every key of a replica, with its commit timestamp.
  std::map<std::string, storage::SnapshotRow> Newest(const std::string& node, storage::SliceId id) {
    std::map<std::string, storage::SnapshotRow> out;
    auto slice = nodes_[Index(node)]->engine->slices()->GetSlice(id);
    EXPECT_TRUE(slice.ok()) << node << " slice " << id;
    if (!slice.ok()) return out;
    auto chunk = storage::ReadSnapshotChunk(**slice, UINT64_MAX - 1, nullptr, SIZE_MAX);
    EXPECT_TRUE(chunk.ok());
    if (chunk.ok()) {
      for (auto& row : chunk->rows) out[row.key] = row;
    }
    return out;
  }

  // The move of the ranking replica of primary slice `si` of d.t to the
  // node that holds none: A ranked, B stays, C receives it, D is the other
  // node. `hold` (A and/or D) do not apply the move until made to.
  struct Move {
    storage::SliceId slice = 0;
    std::string a, b, c, d;
  };
  Move MoveRanking(size_t si, const std::set<char>& hold) {
    auto table = *nodes_[0]->engine->catalog()->GetTable("d", "t");
    const catalog::SliceDef def = table->primary.slices[si];
    Move m;
    m.slice = def.id;
    EXPECT_EQ(def.replicas.size(), 2u);
    m.a = def.replicas[0];
    m.b = def.replicas[1];
    for (const auto& n : nodes_) {
      if (def.PlacedOn(n->name)) continue;
      if (m.c.empty()) {
        m.c = n->name;
      } else {
        m.d = n->name;
      }
    }
    if (hold.count('A')) Hold(m.a);
    if (hold.count('D')) Hold(m.d);
    catalog::Catalog* at_c = nodes_[Index(m.c)]->engine->catalog();
    catalog::RebalanceTaskDef task;
    task.id = *at_c->NextId();
    task.kind = "rebalance";
    task.table_id = table->id;
    task.slice_id = def.id;
    task.source = m.b;
    task.target = m.c;
    task.drop_from = m.a;
    task.started_ms = 1;
    EXPECT_TRUE(at_c->AddBuildingReplica(task).ok());
    // No copy: the rows written before the move stay on A and B only; the
    // test reads and writes rows written after it.
    EXPECT_TRUE(at_c->PromoteReplica(table->id, def.id, task.id, 0, 2).ok());
    auto moved = *at_c->GetTable("d", "t");
    EXPECT_EQ(moved->primary.slices[si].replicas, (std::vector<std::string>{m.b, m.c}));
    return m;
  }

  void CreateTable() {
    exec::Session s(nodes_[0]->engine.get(), 1);
    Run(&s, "CREATE DATABASE d");
    Run(&s, "CREATE TABLE d.t (id INT PRIMARY KEY, v INT) REPLICAS=2");
  }

  // Inserts, through `node`, the ids from `from` on that belong to slice
  // `id` (only its replicas take part, so nodes held back stay behind) until
  // there are `rows` of them; returns the largest id inserted.
  int InsertInto(const std::string& node, storage::SliceId id, int from, int rows) {
    auto table = *nodes_[Index(node)]->engine->catalog()->GetTable("d", "t");
    std::string insert = "INSERT INTO d.t VALUES ";
    int last = from;
    for (int i = from, n = 0; n < rows; ++i) {
      const uint64_t h = catalog::DistributionHash(table->primary, {Value::Int(i)});
      if (table->primary.SliceForHash(h).id != id) continue;
      insert += fmt::format("{}({}, 0)", n > 0 ? "," : "", i);
      last = i;
      ++n;
    }
    exec::Session s(nodes_[Index(node)]->engine.get(), 2);
    Run(&s, insert);
    return last;
  }

  shale::testing::TempDir dir_;
  std::vector<std::unique_ptr<TestNode>> nodes_;
  in_process::AddressBook addresses_;
  std::mutex log_mu_;
  std::vector<std::string> log_;  // GUARDED_BY(log_mu_)
};

TEST_F(StaleRouteTest, ReadRoutedByAnOlderMapDoesNotAnswerFromTheMovedReplica) {
  CreateTable();
  Move m = MoveRanking(0, {'A', 'D'});
  // Written through the new map: slice 0's new rows reach B and C only.
  InsertInto(m.c, m.slice, 1001, 40);
  // D still routes slice 0 to A, which still holds its (stale) replica.
  exec::Session reader(nodes_[Index(m.d)]->engine.get(), 3);
  int refused = 0;
  const uint64_t retries = exec::Session::StatementRetries();
  EXPECT_EQ(FirstInt(RunRetrying(&reader, "SELECT COUNT(*) FROM d.t WHERE id > 1000", &refused)), 40);
  EXPECT_GT(exec::Session::StatementRetries() + refused, retries) << "the first attempt was routed by the old map";
  EXPECT_EQ(FirstInt(RunRetrying(&reader, "SELECT COUNT(*) FROM d.t", &refused)), 40);
}

TEST_F(StaleRouteTest, LocalReadOfAReplicaThatMovedAwayIsRefused) {
  CreateTable();
  Move m = MoveRanking(1, {'A'});
  InsertInto(m.c, m.slice, 2001, 40);
  // A ranked: its old map reads its own replica, which misses the new rows.
  exec::Session reader(nodes_[Index(m.a)]->engine.get(), 3);
  int refused = 0;
  const uint64_t retries = exec::Session::StatementRetries();
  EXPECT_EQ(FirstInt(RunRetrying(&reader, "SELECT COUNT(*) FROM d.t WHERE id > 2000", &refused)), 40);
  EXPECT_GT(exec::Session::StatementRetries() + refused, retries) << "the first attempt was routed by the old map";
}

TEST_F(StaleRouteTest, WriteRoutedByAnOlderMapReachesTheNewReplicaSet) {
  CreateTable();
  Move m = MoveRanking(2, {'A', 'D'});
  InsertInto(m.c, m.slice, 3001, 40);
  // D's old map locks and reads at A and writes to A and B only.
  exec::Session writer(nodes_[Index(m.d)]->engine.get(), 3);
  int refused = 0;
  const uint64_t retries = exec::Session::StatementRetries();
  RunRetrying(&writer, "UPDATE d.t SET v = v + 1 WHERE id > 3000", &refused);
  EXPECT_GT(exec::Session::StatementRetries() + refused, retries) << "the first attempt was routed by the old map";
  // Every new row was updated exactly once, as both new replicas hold it.
  exec::Session check(nodes_[Index(m.b)]->engine.get(), 4);
  EXPECT_EQ(FirstInt(RunRetrying(&check, "SELECT COUNT(*) FROM d.t WHERE id > 3000 AND v = 1", &refused)), 40);
  auto at_b = Newest(m.b, m.slice);
  auto at_c = Newest(m.c, m.slice);
  ASSERT_FALSE(at_c.empty());
  for (const auto& [key, row] : at_c) {
    ASSERT_TRUE(at_b.count(key));
    EXPECT_EQ(at_b[key], row) << "the replicas of slice " << m.slice << " differ";
  }
}

// Push-down (src/exec/pushdown.h): a pushed aggregate takes the same
// checks as Scan. Through SQL, a statement routed by the old map is
// refused and retried (the answer counts the new rows); asked directly, the
// replica that moved away catches up with the sender's map and refuses
// with 1047, while the new replica set answers with one partial row.
TEST_F(StaleRouteTest, PushedAggregateIsNotAnsweredByAReplicaThatMovedAway) {
  CreateTable();
  Move m = MoveRanking(3, {'A', 'D'});
  InsertInto(m.c, m.slice, 4001, 40);
  exec::Session reader(nodes_[Index(m.d)]->engine.get(), 3);
  int refused = 0;
  const uint64_t retries = exec::Session::StatementRetries();
  const std::string sql = "SELECT v, COUNT(*), SUM(id) > 0 FROM d.t WHERE id > 4000 GROUP BY v";
  auto plan = RunRetrying(&reader, "EXPLAIN " + sql, &refused);
  std::string plan_text;
  for (const Row& row : plan.rows) plan_text += row[0].ToText() + "\n";
  EXPECT_NE(plan_text.find("pushed: filter, partial aggregate"), std::string::npos) << plan_text;
  auto r = RunRetrying(&reader, sql, &refused);
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0][1].ToText(), "40");
  EXPECT_GT(exec::Session::StatementRetries() + refused, retries) << "the first attempt was routed by the old map";

  // Directly: D (caught up now) asks A, which has not applied the move.
  auto table = *nodes_[Index(m.d)]->engine->catalog()->GetTable("d", "t");
  sierra::AggregateCall count;
  count.kind = sierra::AggregateKind::kCountStar;
  count.type = SqlType::BigInt();
  count.nullable = false;
  sierra::ColumnInfo column;
  column.name = "count(*)";
  column.type = count.type;
  auto fragment = sierra::SerializePlan(
      *sierra::LogicalOperator::Aggregate(sierra::LogicalOperator::Scan(table, ""), {}, {count}, {column}));
  std::vector<std::string> partials;
  Status st = nodes_[Index(m.d)]->data->AggregateSlice(m.a, m.slice, storage::KeyRange::All(),
                                                       storage::kLatestSnapshot, fragment, &partials);
  EXPECT_EQ(st.mysql_code(), 1047) << st.ToString();
  EXPECT_TRUE(partials.empty());
  for (const std::string& holder : {m.b, m.c}) {
    partials.clear();
    st = nodes_[Index(m.d)]->data->AggregateSlice(holder, m.slice, storage::KeyRange::All(), storage::kLatestSnapshot,
                                                  fragment, &partials);
    ASSERT_TRUE(st.ok()) << holder << ": " << st.ToString();
    ASSERT_EQ(partials.size(), 1u) << holder;
    Row partial;
    ASSERT_TRUE(DecodeRow(partials[0], &partial).ok());
    ASSERT_FALSE(partial.empty());
    EXPECT_EQ(partial[0].ToText(), "40") << holder;
  }
}

// Found by the Jepsen append workload (partition, seed 4): node2, cut off
// and removed from the membership, came back; a point read through node2
// answered no row for a row that always existed. Its statement was routed
// by node2's map from before its removal, where node2 ranked the slice:
// the local replica. Its snapshot's metadata sync then applied node2's
// removal and re-protection, whose new building replica on node2 replaced
// the old storage slice with an empty one at once — and the read went on
// to the storage slice it had routed to, passing the placement check,
// which counted the building replica as placed. A local read must find the
// very replica it routed to still serving here, else it is refused with
// the retryable 1047 (and the autocommit statement is routed again).
TEST_F(StaleRouteTest, LocalReadOfAReplicaRebuiltAfterItsNodeWasRemovedIsRefused) {
  CreateTable();
  auto table = *nodes_[0]->engine->catalog()->GetTable("d", "t");
  const catalog::SliceDef def = table->primary.slices[0];
  ASSERT_EQ(def.replicas.size(), 2u);
  const std::string a = def.replicas[0];  // ranks, and is removed
  const std::string b = def.replicas[1];
  const int last = InsertInto(b, def.id, 1, 20);
  Hold(a);
  // A is removed (its replicas leave the map) and comes back; the
  // rebalancer re-protects the slice with a building replica on A, copied
  // from B. No copy runs: A's new replica stays empty.
  catalog::pb::Command remove;
  remove.mutable_remove_node_replicas()->set_node(a);
  ASSERT_TRUE(Submit(nodes_[Index(b)].get(), remove.SerializeAsString()).status.ok());
  catalog::Catalog* at_b = nodes_[Index(b)]->engine->catalog();
  ASSERT_EQ((*at_b->GetTable("d", "t"))->primary.slices[0].replicas, (std::vector<std::string>{b}));
  catalog::RebalanceTaskDef task;
  task.id = *at_b->NextId();
  task.kind = "reprotect";
  task.table_id = table->id;
  task.slice_id = def.id;
  task.source = b;
  task.target = a;
  task.started_ms = 1;
  ASSERT_TRUE(at_b->AddBuildingReplica(task).ok());
  // A still routes the slice to itself; the snapshot's sync applies the
  // removal and the build before the row is read.
  exec::Session reader(nodes_[Index(a)]->engine.get(), 3);
  int refused = 0;
  const uint64_t retries = exec::Session::StatementRetries();
  auto r = RunRetrying(&reader, fmt::format("SELECT id, v FROM d.t WHERE id = {}", last), &refused);
  ASSERT_EQ(r.rows.size(), 1u) << "the row is missing: read from the empty building replica";
  EXPECT_EQ(r.rows[0][0].ToText(), std::to_string(last));
  EXPECT_GT(exec::Session::StatementRetries() + refused, retries) << "the first attempt was routed by the old map";
  // The building replica serves no reads, asked directly either.
  std::string value;
  Status st = nodes_[Index(b)]->data->Get(a, def.id, "x", storage::kLatestSnapshot, &value);
  EXPECT_EQ(st.mysql_code(), 1047) << st.ToString();
}

}  // namespace
}  // namespace shale::cluster

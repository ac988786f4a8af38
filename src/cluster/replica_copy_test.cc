// Filling a building replica while writes continue, in one process: three
// exec::Engines with their own data directories, SliceService and
// ReplicaCopy on real gRPC servers over loopback, and one command log that
// applies every catalog change to the three catalogs in order (as the Raft
// log does in shaled). A building replica is added to the slice map while a
// writer keeps committing; the target copies from the source, is promoted,
// and then holds exactly what the source holds (docs/cluster.md
// "Reprotection and rebalancing").
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "src/cluster/replica_copy.h"
#include "src/cluster/rpc_server.h"
#include "src/cluster/slice_service.h"
#include "src/cluster/testing/in_process_cluster.h"
#include "src/common/testing/temp_dir.h"
#include "src/exec/engine.h"
#include "src/exec/session.h"
#include "storage/slice_stream.h"

namespace shale::cluster {
namespace {

struct TestNode {
  std::string name;
  std::unique_ptr<exec::Engine> engine;
  std::unique_ptr<SliceService> data;
  std::unique_ptr<ReplicaCopy> copy;
  std::unique_ptr<RpcServer> rpc;
};

class ReplicaCopyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    in_process::OpenNodes(dir_.path(), 3, /*default_slices=*/3, &nodes_);
    ASSERT_EQ(nodes_.size(), 3u);
    const auto address_of = addresses_.Lookup();
    for (auto& n : nodes_) {
      TestNode* raw = n.get();
      raw->engine->catalog()->SetSubmitter(
          [this, raw](const std::string& command) { return Submit(raw, command); });
      exec::ClusterHooks hooks;
      hooks.members = [] { return std::vector<std::string>{"n1", "n2", "n3"}; };
      raw->engine->SetClusterHooks(hooks);
      SliceServiceOptions o;
      o.node_name = n->name;
      o.address_of = address_of;
      o.rpc_timeout_ms = 5000;
      o.compile_fragment = in_process::FragmentCompilerOf(raw->engine.get());
      auto data = SliceService::Open(n->engine->txn(), n->engine->slices(), n->engine->meta(), o);
      ASSERT_TRUE(data.ok()) << data.status().ToString();
      n->data = std::move(data).value();
      n->engine->SetDataRouter(n->data.get());
      ReplicaCopyOptions co;
      co.node_name = n->name;
      co.address_of = address_of;
      co.members = [] { return std::vector<std::string>{"n1", "n2", "n3"}; };
      co.table_write_mutex = [raw](uint64_t id) -> WriterFirstSharedMutex& { return raw->engine->TableWriteMutex(id); };
      co.prepared_on = [raw](uint64_t slice) { return raw->data->PreparedOn(slice); };
      co.poll_ms = 50;
      co.chunk_bytes = 512;  // many chunks
      n->copy = std::make_unique<ReplicaCopy>(n->engine->catalog(), n->engine->slices(), n->engine->txn(), co);
      n->rpc = std::make_unique<RpcServer>(NodeIdentity{NewNodeId(), n->name});
      n->rpc->AddService(n->data->service());
      n->data->RegisterLink(n->rpc->link());
      n->rpc->AddService(n->copy->service());
      ASSERT_TRUE(n->rpc->Start("127.0.0.1:0").ok());
      addresses_.Set(n->name, "127.0.0.1:" + std::to_string(n->rpc->port()));
    }
    for (auto& n : nodes_) n->copy->Start();
  }

  void TearDown() override {
    for (auto& n : nodes_) n->copy->Stop();
    for (auto& n : nodes_) n->rpc->Shutdown();
    for (auto& n : nodes_) n->engine->SetDataRouter(nullptr);
    for (auto& n : nodes_) n->data.reset();
    nodes_.clear();
  }

  // The command log: appended and applied on every node in order; the
  // caller gets its own node's result.
  catalog::CommandResult Submit(TestNode* from, const std::string& command) {
    std::lock_guard lock(log_mu_);
    const uint64_t index = ++log_size_;
    catalog::CommandResult mine;
    for (auto& n : nodes_) {
      catalog::CommandResult r = n->engine->catalog()->ApplyCommand(command, index);
      if (n.get() == from) mine = r;
    }
    return mine;
  }

  exec::StatementResult Run(exec::Session* s, std::string_view sql) { return in_process::Run(s, sql); }

  int NodeIndex(const std::string& name) { return in_process::IndexOf(nodes_, name); }

  // The newest version of every key of a replica, with its commit
  // timestamp (what a snapshot stream at "now" returns).
  std::vector<storage::SnapshotRow> Newest(int node, storage::SliceId id) {
    auto slice = nodes_[node]->engine->slices()->GetSlice(id);
    EXPECT_TRUE(slice.ok());
    if (!slice.ok()) return {};
    auto chunk = storage::ReadSnapshotChunk(**slice, UINT64_MAX - 1, nullptr, SIZE_MAX);
    EXPECT_TRUE(chunk.ok());
    return chunk.ok() ? chunk->rows : std::vector<storage::SnapshotRow>{};
  }

  shale::testing::TempDir dir_;
  std::vector<std::unique_ptr<TestNode>> nodes_;
  in_process::AddressBook addresses_;
  std::mutex log_mu_;
  uint64_t log_size_ = 0;
  std::vector<std::unique_ptr<exec::Session>> sessions_;
};

TEST_F(ReplicaCopyTest, BuildingReplicaGetsEveryWriteAcknowledgedDuringTheCopy) {
  exec::Session s1(nodes_[0]->engine.get(), 1);
  Run(&s1, "CREATE DATABASE d");
  Run(&s1, "CREATE TABLE d.t (id INT PRIMARY KEY, v INT, KEY kv (v)) REPLICAS=2");
  std::string insert = "INSERT INTO d.t VALUES ";
  for (int i = 1; i <= 300; ++i) insert += fmt::format("{}({}, {})", i > 1 ? "," : "", i, i % 10);
  Run(&s1, insert);

  // A slice of the primary key and the node without a replica of it.
  auto table = *nodes_[0]->engine->catalog()->GetTable("d", "t");
  const catalog::SliceDef slice = table->primary.slices[0];
  ASSERT_EQ(slice.replicas.size(), 2u);
  std::string target;
  for (const char* n : {"n1", "n2", "n3"}) {
    if (!slice.PlacedOn(n)) target = n;
  }
  ASSERT_FALSE(target.empty());

  // A writer keeps inserting and updating through another node; it
  // retries statements failing with 1412 (the map changed under them).
  std::atomic<bool> stop{false};
  std::atomic<int> acked{0};
  std::thread writer([&] {
    exec::Session s2(nodes_[1]->engine.get(), 2);
    for (int i = 1000; !stop.load(); ++i) {
      for (;;) {
        auto r = s2.Execute(fmt::format("INSERT INTO d.t VALUES ({}, {})", i, i % 10));
        if (!r.empty() && r.back().ok()) break;
        ASSERT_EQ(r.back().status().mysql_code(), 1412) << r.back().status().ToString();
      }
      for (;;) {
        auto r = s2.Execute(fmt::format("UPDATE d.t SET v = v + 1 WHERE id = {}", i % 300 + 1));
        if (!r.empty() && r.back().ok()) break;
        ASSERT_EQ(r.back().status().mysql_code(), 1412) << r.back().status().ToString();
      }
      ++acked;
    }
  });
  while (acked.load() < 20) std::this_thread::sleep_for(std::chrono::milliseconds(5));

  catalog::RebalanceTaskDef task;
  task.id = *nodes_[0]->engine->catalog()->NextId();
  task.kind = "reprotect";
  task.table_id = table->id;
  task.slice_id = slice.id;
  task.source = slice.replicas[0];
  task.target = target;
  task.started_ms = 1;
  ASSERT_TRUE(nodes_[0]->engine->catalog()->AddBuildingReplica(task).ok());
  // The target made its building slice when it applied the change.
  auto state = nodes_[NodeIndex(target)]->engine->slices()->GetBuildState(slice.id);
  ASSERT_TRUE(state.ok());

  // Promoted by the target's builder once the copy is done.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    auto now = *nodes_[0]->engine->catalog()->GetTable("d", "t");
    const catalog::SliceDef& s = now->primary.slices[0];
    if (s.building.empty() && s.replicas.size() == 3) break;
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the copy did not finish";
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  while (acked.load() < 40 + 20) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  stop = true;
  writer.join();

  auto done = *nodes_[2]->engine->catalog()->GetTable("d", "t");
  EXPECT_EQ(done->primary.slices[0].replicas.back(), target);
  auto tasks = nodes_[2]->engine->catalog()->RebalanceTasks();
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0].state, "finished");
  EXPECT_GT(tasks[0].bytes, 0u);
  ASSERT_TRUE(nodes_[NodeIndex(target)]->engine->slices()->GetBuildState(slice.id).ok());
  EXPECT_EQ(nodes_[NodeIndex(target)]->engine->slices()->GetBuildState(slice.id)->state,
            storage::SliceState::kReady);
  // The new replica holds the newest version of every row, at the same
  // commit timestamps, as both old ones.
  auto source_rows = Newest(NodeIndex(slice.replicas[0]), slice.id);
  EXPECT_GT(source_rows.size(), 50u);
  EXPECT_EQ(Newest(NodeIndex(target), slice.id), source_rows);
  EXPECT_EQ(Newest(NodeIndex(slice.replicas[1]), slice.id), source_rows);
}

TEST_F(ReplicaCopyTest, CancelledBuildLeavesTheMapAndItsSlice) {
  exec::Session s1(nodes_[0]->engine.get(), 1);
  Run(&s1, "CREATE DATABASE d");
  Run(&s1, "CREATE TABLE d.t (id INT PRIMARY KEY, v INT) REPLICAS=2");
  auto table = *nodes_[0]->engine->catalog()->GetTable("d", "t");
  const catalog::SliceDef slice = table->primary.slices[1];
  std::string target;
  for (const char* n : {"n1", "n2", "n3"}) {
    if (!slice.PlacedOn(n)) target = n;
  }
  // Stop the target's builder so the task stays building, then cancel it.
  nodes_[NodeIndex(target)]->copy->Stop();
  catalog::RebalanceTaskDef task;
  task.id = *nodes_[0]->engine->catalog()->NextId();
  task.kind = "reprotect";
  task.table_id = table->id;
  task.slice_id = slice.id;
  task.source = slice.replicas[0];
  task.target = target;
  ASSERT_TRUE(nodes_[0]->engine->catalog()->AddBuildingReplica(task).ok());
  exec::Session s2(nodes_[1]->engine.get(), 2);
  Run(&s2, "INSERT INTO d.t VALUES (1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6)");
  ASSERT_TRUE(nodes_[1]->engine->catalog()->CancelTask(table->id, slice.id, task.id, "test", 2).ok());
  for (auto& n : nodes_) {
    auto now = *n->engine->catalog()->GetTable("d", "t");
    EXPECT_TRUE(now->primary.slices[1].building.empty());
    EXPECT_EQ(now->primary.slices[1].replicas, slice.replicas);
    EXPECT_EQ(n->engine->catalog()->RebalanceTasks()[0].state, "cancelled");
  }
  // The target drops its storage slice once statements cannot use it.
  exec::Engine* e = nodes_[NodeIndex(target)]->engine.get();
  EXPECT_TRUE(e->slices()->GetSlice(slice.id).ok());
  e->DropRetiredSlices(std::chrono::milliseconds(0));
  EXPECT_FALSE(e->slices()->GetSlice(slice.id).ok());
}

}  // namespace
}  // namespace shale::cluster

// ClusterNode over real gRPC on loopback, in one process: three nodes join,
// a stale-epoch request from a non-member is refused, a stopped node is
// removed, and a lone survivor reports no quorum (error 1047).
#include "src/common/testing/wait_for.h"
#include "src/cluster/cluster_node.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "src/cluster/raft.grpc.pb.h"
#include "src/cluster/rpc_server.h"
#include "src/common/log.h"
#include "storage/meta_store.h"

namespace shale::cluster {
namespace {

const bool kQuietLogs = (log::SetLevel(log::Level::kError), true);

// One node: its store, membership and RPC server (destroyed in reverse, so
// the server stops before the ClusterNode it calls into).
struct TestNode {
  std::string dir;
  std::unique_ptr<storage::MetaStore> store;
  std::unique_ptr<ClusterNode> node;
  std::unique_ptr<RpcServer> rpc;
  std::string address;

  void Start(const std::string& name, const std::vector<std::string>& join) {
    dir = ::testing::TempDir() + "/cluster_node_" + name + "_" + std::to_string(std::random_device{}());
    auto s = storage::MetaStore::Open(dir);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store = std::move(*s);
    auto identity = LoadOrCreateNodeIdentity(store.get(), name);
    ASSERT_TRUE(identity.ok());
    ClusterOptions o;
    o.join = join;
    o.election_timeout_ms = 300;
    o.heartbeat_interval_ms = 30;
    o.node_timeout_ms = 1000;
    o.tick_ms = 10;
    node = std::make_unique<ClusterNode>(*identity, o, store.get());
    rpc = std::make_unique<RpcServer>(*identity);
    rpc->AddService(node->service());
    rpc->SetEpochSource([n = node.get()] { return n->epoch(); });
    ASSERT_TRUE(rpc->Start("127.0.0.1:0").ok());
    address = "127.0.0.1:" + std::to_string(rpc->port());
    node->SetRpcAddress(address);
    ASSERT_TRUE(node->Start().ok());
  }
  void Stop() {
    if (rpc) rpc->Shutdown();
    if (node) node->Stop();
  }
  ~TestNode() {
    Stop();
    rpc.reset();
    node.reset();
    store.reset();
    std::filesystem::remove_all(dir);
  }
};

using shale::testing::WaitFor;

TEST(ClusterNodeTest, LoneNodeLeadsAtOnce) {
  TestNode n;
  n.Start("solo", {});
  // Start returns with the node leading its one-node cluster.
  EXPECT_TRUE(n.node->HasQuorum());
  EXPECT_TRUE(n.node->CheckQuorum().ok());
  auto nodes = n.node->Nodes();
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_TRUE(nodes[0].is_leader);
  EXPECT_EQ(nodes[0].state, "online");
  EXPECT_EQ(nodes[0].epoch, 1u);
  auto ping = PingNode(n.address, std::chrono::milliseconds(2000));
  ASSERT_TRUE(ping.ok());
  EXPECT_EQ(ping->epoch(), 1u);
}

TEST(ClusterNodeTest, JoinStaleEpochRemovalAndQuorumLoss) {
  TestNode a, b, c;
  a.Start("a", {});
  b.Start("b", {a.address});
  c.Start("c", {a.address});
  ASSERT_TRUE(WaitFor(
      [&] {
        for (TestNode* n : {&a, &b, &c}) {
          if (n->node->Nodes().size() != 3 || !n->node->HasQuorum()) return false;
        }
        return true;
      },
      std::chrono::seconds(15)));
  EXPECT_EQ(a.node->epoch(), 3u);  // bootstrap + two joins

  // A vote request from a node that is not a member, at an old epoch: refused.
  auto stub = RaftService::NewStub(grpc::CreateChannel(a.address, grpc::InsecureChannelCredentials()));
  RaftMessagePb request;
  request.set_type(1);  // vote
  request.set_from("0123456789abcdef0123456789abcdef");
  request.set_to(a.node->identity().id);
  request.set_term(1000);
  request.set_epoch(1);
  RaftMessagePb reply;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::Status st = stub->RequestVote(&context, request, &reply);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << st.error_message();
  EXPECT_NE(st.error_message().find("stale epoch"), std::string::npos);
  // Its term did not leak into the cluster.
  for (TestNode* n : {&a, &b, &c}) EXPECT_TRUE(n->node->HasQuorum());

  // c stops: a and b remove it and keep their quorum.
  c.Stop();
  ASSERT_TRUE(WaitFor([&] { return a.node->Nodes().size() == 2 && b.node->Nodes().size() == 2; },
                      std::chrono::seconds(10)));
  EXPECT_TRUE(a.node->HasQuorum());
  EXPECT_TRUE(b.node->HasQuorum());
  EXPECT_EQ(a.node->epoch(), 4u);

  // b stops too: a alone is not a majority of {a, b}.
  b.Stop();
  ASSERT_TRUE(WaitFor([&] { return !a.node->HasQuorum(); }, std::chrono::seconds(5)));
  Status refused = a.node->CheckQuorum();
  EXPECT_EQ(refused.mysql_code(), 1047);
  EXPECT_STREQ(refused.sqlstate(), "08S01");
  EXPECT_NE(refused.message().find("no quorum"), std::string::npos);
  // The membership is not shrunk to a: that would need b's vote.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_EQ(a.node->Nodes().size(), 2u);
  EXPECT_FALSE(a.node->HasQuorum());
}

}  // namespace
}  // namespace shale::cluster

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "shale/version.h"
#include "src/cluster/node_identity.h"
#include "src/cluster/rpc_server.h"
#include "storage/meta_store.h"

namespace shale::cluster {
namespace {

using std::chrono::milliseconds;

// A fresh directory under the system temp dir, removed at scope exit.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() / ("shale_cluster_test_" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

// A loopback port nothing listens on: bound, read back, then closed.
int ClosedPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  close(fd);
  return ntohs(addr.sin_port);
}

TEST(RpcServerTest, PingAnswersWithIdentityAndVersion) {
  NodeIdentity identity{NewNodeId(), "node-a"};
  RpcServer server(identity);
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  ASSERT_GT(server.port(), 0);

  Result<PingResponse> r = PingNode("127.0.0.1:" + std::to_string(server.port()), milliseconds(5000), "tester");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->node_id(), identity.id);
  EXPECT_EQ(r->node_name(), "node-a");
  EXPECT_EQ(r->epoch(), 0u);
  EXPECT_EQ(r->version(), kServerVersion);

  server.Shutdown();
  EXPECT_EQ(server.port(), 0);
  server.Shutdown();  // idempotent
}

TEST(RpcServerTest, SecondServerCannotTakeABoundPort) {
  RpcServer first(NodeIdentity{NewNodeId(), "first"});
  ASSERT_TRUE(first.Start("127.0.0.1:0").ok());
  RpcServer second(NodeIdentity{NewNodeId(), "second"});
  Status st = second.Start("127.0.0.1:" + std::to_string(first.port()));
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
}

TEST(RpcServerTest, PingOfClosedPortIsUnavailableWithinDeadline) {
  const std::string address = "127.0.0.1:" + std::to_string(ClosedPort());
  const milliseconds deadline(2000);
  auto start = std::chrono::steady_clock::now();
  Result<PingResponse> r = PingNode(address, deadline);
  auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().ToString();
  EXPECT_NE(r.status().message().find(address), std::string::npos) << r.status().message();
  EXPECT_LT(elapsed, deadline + milliseconds(1000));
}

TEST(NodeIdentityTest, NewNodeIdIs32HexDigitsAndRandom) {
  std::string a = NewNodeId();
  std::string b = NewNodeId();
  EXPECT_EQ(a.size(), 32u);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(a, b);
}

TEST(NodeIdentityTest, CreatedOnceAndStableAcrossReopen) {
  TempDir dir;
  std::string first_id;
  {
    auto store = storage::MetaStore::Open(dir.path());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    auto identity = LoadOrCreateNodeIdentity(store->get(), "node-a");
    ASSERT_TRUE(identity.ok()) << identity.status().ToString();
    EXPECT_EQ(identity->name, "node-a");
    EXPECT_EQ(identity->id.size(), 32u);
    first_id = identity->id;
    // A second load in the same process returns the same identity.
    auto again = LoadOrCreateNodeIdentity(store->get(), "node-a");
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->id, first_id);
  }
  {
    auto store = storage::MetaStore::Open(dir.path());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    auto identity = LoadOrCreateNodeIdentity(store->get(), "node-a");
    ASSERT_TRUE(identity.ok()) << identity.status().ToString();
    EXPECT_EQ(identity->id, first_id);
    EXPECT_EQ(identity->name, "node-a");
  }
}

TEST(NodeIdentityTest, RenameKeepsIdAndPersistsName) {
  TempDir dir;
  std::string first_id;
  {
    auto store = storage::MetaStore::Open(dir.path());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    auto identity = LoadOrCreateNodeIdentity(store->get(), "old-name");
    ASSERT_TRUE(identity.ok()) << identity.status().ToString();
    first_id = identity->id;
    auto renamed = LoadOrCreateNodeIdentity(store->get(), "new-name");
    ASSERT_TRUE(renamed.ok()) << renamed.status().ToString();
    EXPECT_EQ(renamed->id, first_id);
    EXPECT_EQ(renamed->name, "new-name");
  }
  {
    auto store = storage::MetaStore::Open(dir.path());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    std::string raw;
    ASSERT_TRUE(store.value()->Get(kNodeIdentityKey, &raw).ok());
    EXPECT_NE(raw.find("new-name"), std::string::npos);
    auto identity = LoadOrCreateNodeIdentity(store->get(), "new-name");
    ASSERT_TRUE(identity.ok());
    EXPECT_EQ(identity->id, first_id);
    EXPECT_EQ(identity->name, "new-name");
  }
}

TEST(NodeIdentityTest, CorruptRecordIsReportedNotReplaced) {
  TempDir dir;
  auto store = storage::MetaStore::Open(dir.path());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  ASSERT_TRUE(store.value()->Put(kNodeIdentityKey, "garbage").ok());
  auto identity = LoadOrCreateNodeIdentity(store->get(), "node-a");
  ASSERT_FALSE(identity.ok());
  EXPECT_TRUE(identity.status().IsCorruption()) << identity.status().ToString();
  std::string raw;
  ASSERT_TRUE(store.value()->Get(kNodeIdentityKey, &raw).ok());
  EXPECT_EQ(raw, "garbage");
}

}  // namespace
}  // namespace shale::cluster
